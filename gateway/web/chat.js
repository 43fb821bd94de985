// kgagent docs chat: asks over the multiplexed websocket (/api/v1/socket),
// streams thoughts, observations and the answer, and lists citations. No
// build step. An API key may come from ?api_key= or localStorage.
(function () {
  "use strict";
  var params = new URLSearchParams(location.search);
  var apiKey = params.get("api_key") || localStorage.getItem("kgagent_api_key") || "";
  var defaultCollection = params.get("collection") || "";
  var log = document.getElementById("log");
  var form = document.getElementById("ask");
  var input = document.getElementById("question");
  var picker = document.getElementById("collection");
  var status = document.getElementById("status");
  var socket = null;
  var pending = {}; // id -> {turn, lastSeq}
  var counter = 0;

  function headers() {
    return apiKey ? { "Authorization": "Bearer " + apiKey } : {};
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function safeURL(u) {
    try {
      var url = new URL(u, location.href);
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch (e) { return null; }
  }

  var keyform = document.getElementById("keyform");
  keyform.addEventListener("submit", function (ev) {
    ev.preventDefault();
    localStorage.setItem("kgagent_api_key", document.getElementById("apikey").value.trim());
    location.reload();
  });

  fetch("/api/v1/collections", { headers: headers() })
    .then(function (r) {
      if (r.status === 401) keyform.hidden = false;
      return r.ok ? r.json() : { collections: [] };
    })
    .then(function (body) {
      var cols = body.collections || [];
      // The collections replace the "(default)" placeholder: listing both
      // showed the default collection twice, once under each name.
      if (cols.length) picker.textContent = "";
      cols.forEach(function (c) {
        var o = el("option", "", c.name);
        o.value = c.name;
        picker.appendChild(o);
      });
      if (defaultCollection) picker.value = defaultCollection;
      else if (cols.some(function (c) { return c.name === "default"; })) picker.value = "default";
    })
    .catch(function () {});

  function connect() {
    if (socket && (socket.readyState === 0 || socket.readyState === 1)) return socket;
    var proto = location.protocol === "https:" ? "wss:" : "ws:";
    var url = proto + "//" + location.host + "/api/v1/socket" + (apiKey ? "?api_key=" + encodeURIComponent(apiKey) : "");
    socket = new WebSocket(url);
    socket.onopen = function () {
      status.textContent = "";
      // Resume every stream that was cut off.
      Object.keys(pending).forEach(function (id) {
        if (pending[id].sent) socket.send(JSON.stringify({ id: id, resume: { last_seq: pending[id].lastSeq } }));
        else { pending[id].sent = true; socket.send(pending[id].frame); }
      });
    };
    socket.onmessage = function (ev) { onFrame(JSON.parse(ev.data)); };
    socket.onclose = function () {
      if (Object.keys(pending).length > 0) {
        status.textContent = "Reconnecting…";
        setTimeout(connect, 1000);
      }
    };
    return socket;
  }

  function onFrame(f) {
    var p = pending[f.id];
    if (!p) return;
    if (f.seq) p.lastSeq = f.seq;
    var t = p.turn;
    if (f.error) {
      t.answer.classList.remove("streaming");
      t.answer.appendChild(el("span", "error", f.error.message + " (" + f.error.type + ")"));
      delete pending[f.id];
      return;
    }
    var r = f.response || {};
    if (r.thought !== undefined && !f.complete) {
      t.steps.appendChild(el("li", "thought", r.thought));
      t.details.hidden = false;
    }
    if (r.observation !== undefined) {
      t.steps.appendChild(el("li", "observation", r.observation));
      t.details.hidden = false;
    }
    if (r.answer !== undefined) {
      if (r.delta) t.answer.textContent += r.answer;
      else t.answer.textContent = typeof r.answer === "string" ? r.answer : JSON.stringify(r.answer);
    }
    if (f.complete) {
      t.answer.classList.remove("streaming");
      (r.sources || []).forEach(function (s) {
        var href = safeURL(s.url);
        if (!href) return;
        var li = el("li");
        var a = el("a", "citation", s.title || s.url);
        a.href = href;
        a.target = "_blank";
        a.rel = "noopener";
        a.title = href;
        li.appendChild(a);
        var u = new URL(href);
        li.appendChild(el("span", "where", " " + u.host + u.pathname + u.hash));
        t.sources.appendChild(li);
      });
      delete pending[f.id];
    }
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var q = input.value.trim();
    if (!q) return;
    input.value = "";
    var turn = el("article", "turn");
    turn.appendChild(el("div", "q", q));
    var details = el("details", "steps");
    details.appendChild(el("summary", "", "Thoughts and observations"));
    var steps = el("ol");
    details.appendChild(steps);
    details.hidden = true;
    turn.appendChild(details);
    var answer = el("div", "answer streaming");
    turn.appendChild(answer);
    var sources = el("ol", "sources");
    turn.appendChild(sources);
    log.appendChild(turn);
    var id = "q" + Date.now().toString(36) + "-" + (++counter) + "-" + Math.random().toString(36).slice(2, 8);
    var frame = JSON.stringify({ id: id, service: "agent", flow: "default", request: { question: q, collection: picker.value || undefined } });
    pending[id] = { turn: { answer: answer, steps: steps, details: details, sources: sources }, lastSeq: 0, frame: frame, sent: false };
    var s = connect();
    if (s.readyState === 1) { pending[id].sent = true; s.send(frame); }
    turn.scrollIntoView({ block: "end" });
  });
})();
