// memdeck's "Memory" tab for Hermes' web dashboard (written by `memdeck plugin install`; do not edit).
// No build step and no dependency: React and the dashboard's components come from the dashboard's
// plugin SDK (window.__HERMES_PLUGIN_SDK__); every request goes through its authedFetch, which sends
// the dashboard's own session token. Nothing is fetched but this plugin's API (/api/plugins/memdeck/).
(function () {
  "use strict";
  var SDK = window.__HERMES_PLUGIN_SDK__;
  if (!SDK || !window.__HERMES_PLUGINS__) return;
  var React = SDK.React, h = React.createElement, hooks = SDK.hooks, C = SDK.components || {};
  var API = "/api/plugins/memdeck";
  var REFRESH_MS = 15000;

  function el(Comp, fallback) { return Comp || fallback; }
  var Card = el(C.Card, "section"), CardHeader = el(C.CardHeader, "div"), CardTitle = el(C.CardTitle, "h3");
  var CardContent = el(C.CardContent, "div"), Button = el(C.Button, "button"), Badge = el(C.Badge, "span");

  function call(path, body) {
    var init = body === undefined ? {} : {
      method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
    return SDK.authedFetch(API + path, init).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (data) {
        if (r.ok) return data;
        var d = data && data.detail, why = d && d.refused ? d.refused : (typeof d === "string" ? d : "HTTP " + r.status);
        var err = new Error(why); err.status = r.status; throw err;
      });
    });
  }

  function num(n) { return n === null || n === undefined ? "?" : Number(n).toLocaleString("en-US"); }
  function age(s) {
    if (s === null || s === undefined) return "age unknown";
    if (s < 60) return "now"; if (s < 3600) return Math.floor(s / 60) + " min";
    if (s < 86400) return Math.floor(s / 3600) + " h"; return Math.floor(s / 86400) + " d";
  }
  function when(ts) { return ts ? new Date(ts * 1000).toLocaleString() : "-"; }
  function line(t, n) { t = String(t === null || t === undefined ? "" : t).replace(/\s+/g, " "); return t.length > n ? t.slice(0, n - 1) + "…" : t; }

  function Id(props) { return h("span", {style: {fontFamily: "monospace", opacity: 0.85}}, props.children); }

  function Section(props) {
    return h(Card, {className: "mb-4", "data-section": props.id},
      h(CardHeader, null, h(CardTitle, null, props.title)), h(CardContent, null, props.children));
  }

  function Capacity(props) {
    return h("div", {className: "grid gap-3 sm:grid-cols-2"}, props.rows.map(function (c) {
      var pct = Math.max(0, Math.min(100, c.pct || 0));
      return h("div", {key: c.target, "data-capacity": c.target},
        h("div", {className: "flex justify-between text-sm"}, h("strong", null, c.file),
          h("span", null, num(c.chars) + "/" + num(c.limit) + " chars (" + c.pct + "%) · " + c.entries + " entries")),
        h("div", {style: {height: "6px", background: "rgba(127,127,127,.25)", marginTop: "4px"}},
          h("div", {style: {height: "6px", width: pct + "%", background: pct >= 90 ? "#d9534f" : pct >= 75 ? "#e0a030" : "currentColor"}})),
        c.error ? h("div", {className: "text-xs", role: "alert"}, c.error) : null);
    }));
  }

  function PendingRow(props) {
    var p = props.item, editing = hooks.useState(false), text = hooks.useState(p.text || "");
    var ro = props.readOnly, busy = props.busy;
    var buttons = ro ? null : h("div", {className: "flex gap-2 mt-1"},
      h(Button, {size: "sm", disabled: busy, "data-action": "approve", onClick: function () { props.act("/pending/" + encodeURIComponent(p.id) + "/approve"); }}, "Approve"),
      h(Button, {size: "sm", disabled: busy, "data-action": "reject", onClick: function () { props.act("/pending/" + encodeURIComponent(p.id) + "/reject"); }}, "Reject"),
      h(Button, {size: "sm", disabled: busy, "data-action": "edit", onClick: function () { editing[1](!editing[0]); }}, editing[0] ? "Cancel edit" : "Edit"));
    return h("li", {"data-pending-id": p.id, className: "py-2 border-b border-current/10"},
      h("div", {className: "flex flex-wrap gap-2 items-center text-sm"},
        h(Id, null, p.id), h(Badge, null, p.state), h("span", null, (p.action || "?") + " " + p.target),
        h("span", {className: "opacity-70"}, age(p.age_s) + (p.age_s !== null && p.age_s >= 60 ? " old" : "")),
        p.threats && p.threats.length ? h(Badge, null, "threats: " + p.threats.join(", ")) : null),
      h("div", {className: "text-sm mt-1", style: {whiteSpace: "pre-wrap"}}, p.text || p.summary || ""),
      p.state !== "clean" && p.reason ? h("div", {className: "text-xs mt-1 opacity-80"}, "why: " + p.reason) : null,
      buttons,
      editing[0] && !ro ? h("div", {className: "mt-2"},
        h("textarea", {value: text[0], rows: 3, style: {width: "100%"}, "data-edit-text": p.id,
          onChange: function (e) { text[1](e.target.value); }}),
        h(Button, {size: "sm", disabled: busy, "data-action": "save-edit",
          onClick: function () { props.act("/pending/" + encodeURIComponent(p.id) + "/edit", {text: text[0]}); }}, "Save and approve")) : null);
  }

  function MemoryTab() {
    var st = hooks.useState(null), msg = hooks.useState(null), busy = hooks.useState(false);
    var load = hooks.useCallback(function () {
      return call("/state").then(function (d) { st[1](d); },
        function (e) { msg[1]({error: true, text: "could not read memdeck's state: " + e.message}); });
    }, []);
    hooks.useEffect(function () {
      load(); var t = setInterval(load, REFRESH_MS); return function () { clearInterval(t); };
    }, [load]);
    function act(path, body) {
      busy[1](true);
      call(path, body || {}).then(function (r) { msg[1]({error: false, text: r.message + (r.journal_id ? " (journal #" + r.journal_id + ")" : "")}); },
        function (e) { msg[1]({error: true, text: "refused: " + e.message}); })
        .then(load).then(function () { busy[1](false); });
    }
    var s = st[0];
    if (!s) return h("div", {className: "p-4"}, msg[0] ? msg[0].text : "Loading memdeck…");
    var ro = s.read_only, stale = s.stale_sessions || {sessions: []};
    return h("div", {className: "p-4 max-w-5xl", "data-memdeck-tab": "1"},
      h("div", {className: "flex items-center gap-3 mb-3"}, h("h2", {className: "text-lg"}, "Memory"),
        h("span", {className: "text-xs opacity-70"}, s.home),
        ro ? h(Badge, {"data-read-only": "1"}, "read-only: " + s.read_only_reason) : null,
        h(Button, {size: "sm", onClick: load}, "Refresh")),
      msg[0] ? h("div", {role: msg[0].error ? "alert" : "status", "data-message": msg[0].error ? "error" : "ok",
        className: "mb-3 text-sm"}, msg[0].text) : null,
      h(Section, {id: "capacity", title: "Capacity"}, h(Capacity, {rows: s.capacity})),
      h(Section, {id: "review", title: "Review queue (" + s.pending.length + ")"},
        s.pending.length ? h("ul", null, s.pending.map(function (p) {
          return h(PendingRow, {key: p.id, item: p, readOnly: ro, busy: busy[0], act: act});
        })) : h("p", {className: "text-sm"}, "No memory writes wait for review.")),
      h(Section, {id: "stale", title: "Stale sessions (" + stale.sessions.length + ")"},
        stale.state_db && stale.state_db.state !== "ok" ? h("p", {className: "text-sm"}, "state.db: " + stale.state_db.state) : null,
        stale.sessions.length ? h("ul", null, stale.sessions.map(function (r) {
          return h("li", {key: r.session_id, "data-session-id": r.session_id, className: "text-sm"},
            h(Id, null, r.session_id), " " + (r.source || "") + " · frozen " + when(r.frozen_at) + " · " + r.differences +
            " difference" + (r.differences === 1 ? "" : "s") + (r.new_session ? " · " + r.new_session : ""));
        })) : h("p", {className: "text-sm"}, "Every open session sees the memory on disk.")),
      h(Section, {id: "changes", title: "Last changes"},
        s.changes.length ? h("ul", null, s.changes.map(function (c) {
          return h("li", {key: c.id, "data-change-id": c.id, className: "py-1 text-sm border-b border-current/10"},
            h("div", {className: "flex gap-2 items-center"}, h(Id, null, "#" + c.id), h("span", null, c.op + " " + (c.target || c.session_id || c.scope || "")),
              h("span", {className: "opacity-70"}, c.actor + " · " + when(c.until)),
              c.reverted_by ? h(Badge, null, "reverted (journal #" + c.reverted_by + ")") : (ro ? null :
                h(Button, {size: "sm", disabled: busy[0], "data-action": "revert", onClick: function () { act("/changes/" + c.id + "/revert"); }}, "Revert"))),
            c.lines ? c.lines.map(function (l, i) { return h("div", {key: i, className: "opacity-80"}, line(l, 160)); }) : null,
            !c.lines && c.before !== null && c.before !== undefined ? h("div", {className: "opacity-80"}, "− " + line(c.before, 160)) : null,
            !c.lines && c.after !== null && c.after !== undefined ? h("div", null, "+ " + line(c.after, 160)) : null);
        })) : h("p", {className: "text-sm"}, "No changes recorded yet.")));
  }

  window.__HERMES_PLUGINS__.register("memdeck", MemoryTab);
})();
