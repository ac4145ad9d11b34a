#!/bin/bash
# soak_idle.sh CHECKOUT LABEL MINUTES: the dashboard of CHECKOUT in tmux on a fresh copy of the 200k
# home with semantic detection and nothing writing; CPU% of a core per 15 s, RSS, the status line.
set -u
CO=$1; LABEL=$2; MIN=$3
H=$(mktemp -d /tmp/soak-$LABEL-XXXX)/home
cp -r ${MEMDECK_BENCH_HOME:-/work/benchhomes/200k} "$H"; rm -rf "$H/memdeck"
MODEL=$($CO/.venv/bin/python -c "from memdeck.core.anchors.encoder import package_model_folder as f; print(f())")
sed -i "s|  detection: \"keyword\"|  detection: semantic\n  embedding_model: $MODEL|" "$H/config.yaml"
S=soak-$LABEL
tmux kill-session -t $S 2>/dev/null
tmux new-session -d -s $S -x 120 -y 40 "cd $CO && .venv/bin/python -m memdeck.tui --home $H"
PID=""
for i in $(seq 1 100); do
  for p in $(pgrep -f "memdeck.tui --home $H"); do [ "$(cat /proc/$p/comm 2>/dev/null)" != sh ] && PID=$p; done
  [ -n "$PID" ] && break; sleep 0.1
done
OUT=${MEMDECK_BENCH_OUT:-/tmp}/soak-$LABEL.log
echo "pid $PID home $H" > $OUT
T0=$(date +%s); C0=$(awk '{print $14+$15}' /proc/$PID/stat)
PC=$C0; PT=$T0
while [ $(( $(date +%s) - T0 )) -lt $(( MIN * 60 )) ]; do
  sleep 15
  C=$(awk '{print $14+$15}' /proc/$PID/stat); T=$(date +%s)
  RSS=$(awk '/VmRSS/{print $2}' /proc/$PID/status)
  LINE=$(tmux capture-pane -p -t $S | grep -m1 "memdeck" | cut -c1-118)
  echo "t=$((T-T0))s cpu=$(( (C-PC) * 100 / ((T-PT) * 100) ))% rss=$((RSS/1024))MiB | $LINE" >> $OUT
  PC=$C; PT=$T
done
tmux capture-pane -p -t $S > ${MEMDECK_BENCH_OUT:-/tmp}/soak-$LABEL.screen.txt
tmux kill-session -t $S
