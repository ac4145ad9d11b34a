#!/bin/bash
# The dashboard in tmux on a copy of a bench home, beside bench/play_hermes.py, as a person runs it
# (issue 23). Samples CPU, RSS and rchar every 30 s, keeps screen captures, py-spy profiles the
# dashboard for the first --profile seconds of the agent's run.
#
#   bench/soak_tmux.sh HOME MINUTES OUT_PREFIX [PROFILE_SECONDS [COMPACT_AT]]
#
# Writes OUT_PREFIX.log (samples, the agent's events, load averages), OUT_PREFIX.screen.txt
# (screen captures), OUT_PREFIX.pyspy.svg and OUT_PREFIX.pyspy.txt (py-spy raw stacks).
set -u
SRC=$1; MIN=$2; OUT=$3; PROF=${4:-120}; AT=${5:-800}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
H=$(mktemp -d /tmp/memdeck-soak-XXXXXX)/home
cp -r "$SRC" "$H"; rm -rf "$H/memdeck"
export HERMES_HOME=$H
unset PYTHONDONTWRITEBYTECODE
S=memdeck-soak-$$
T0=$(date +%s.%N)
tmux new-session -d -s $S -x 120 -y 40 "python -m memdeck.tui --home $H"
sleep 1
PID=""
for i in $(seq 1 100); do  # the python process (tmux starts it through a shell)
  for p in $(pgrep -f "memdeck.tui --home $H"); do [ "$(cat /proc/$p/comm 2>/dev/null)" != sh ] && PID=$p; done
  [ -n "$PID" ] && break; sleep 0.1
done
for i in $(seq 1 600); do tmux capture-pane -p -t $S | grep -q "updated" && break; sleep 0.5; done
echo "launch -> full history on screen: $(python3 -c "import time;print(round(time.time()-$T0,2))") s (load $(cut -d' ' -f1 /proc/loadavg))" > "$OUT.log"
{ echo "== after launch"; tmux capture-pane -p -t $S; } > "$OUT.screen.txt"
python "$ROOT/bench/play_hermes.py" --minutes "$MIN" --memory-every 20 --compact-at "$AT" > "$OUT.agent.jsonl" 2>&1 &
PLAY=$!
sleep 3
py-spy record -p $PID -d "$PROF" -r 50 -o "$OUT.pyspy.svg" > /dev/null 2>&1 &
py-spy record -p $PID -d "$PROF" -r 50 -f raw -o "$OUT.pyspy.txt" > /dev/null 2>&1 &
sample() { awk '{print $14+$15}' /proc/$PID/stat; }
C0=$(sample); R0=$(awk '$1=="rchar:"{print $2}' /proc/$PID/io); W0=$(awk '$1=="write_bytes:"{print $2}' /proc/$PID/io); S0=$(date +%s.%N)
PC=$C0; PR=$R0; PT=$S0
echo "t_s cpu_pct_last30s rss_mib rchar_mb_last30s load" >> "$OUT.log"
while kill -0 $PLAY 2>/dev/null; do
  sleep 30
  C=$(sample); R=$(awk '$1=="rchar:"{print $2}' /proc/$PID/io); T=$(date +%s.%N); RSS=$(awk '/VmRSS/{print $2}' /proc/$PID/status)
  python3 -c "print(f'{$T-$S0:.0f} {($C-$PC)/100/($T-$PT)*100:.2f} {$RSS/1024:.1f} {($R-$PR)/1e6:.2f}', open('/proc/loadavg').read().split()[0])" >> "$OUT.log"
  PC=$C; PR=$R; PT=$T
  { echo "== $(date +%T)"; tmux capture-pane -p -t $S | head -12; } >> "$OUT.screen.txt"
done
C=$(sample); R=$(awk '$1=="rchar:"{print $2}' /proc/$PID/io); W=$(awk '$1=="write_bytes:"{print $2}' /proc/$PID/io); T=$(date +%s.%N)
N=$(grep -c '"append"' "$OUT.agent.jsonl"); K=$(grep -c '"compaction"' "$OUT.agent.jsonl"); M=$(grep -c '"memory"' "$OUT.agent.jsonl")
python3 -c "print(f'total: {($T-$S0)/60:.1f} min, {$N} append events, {$K} compactions, {$M} memory writes; CPU {($C-$C0)/100/($T-$S0)*100:.2f} % of a core; rchar {($R-$R0)/1e6:.1f} MB ({($R-$R0)/max(1,$N)/1e6:.3f} MB per append event); disk written {($W-$W0)/1e6:.2f} MB')" >> "$OUT.log"
tmux send-keys -t $S 1; sleep 2
{ echo "== end, Integrity panel"; tmux capture-pane -p -t $S; } >> "$OUT.screen.txt"
tmux send-keys -t $S q; sleep 2; tmux kill-session -t $S 2>/dev/null
rm -rf "$(dirname "$H")"
cat "$OUT.log"
