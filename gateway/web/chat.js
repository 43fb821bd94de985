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
      t.steps.appendChild(step(r));
      t.details.hidden = false;
    }
    if (r.observation !== undefined) {
      t.steps.appendChild(observation(r));
      t.details.hidden = false;
    }
    if (r.answer !== undefined) {
      if (r.delta) t.answer.textContent += r.answer;
      else t.answer.textContent = typeof r.answer === "string" ? r.answer : JSON.stringify(r.answer);
    }
    if (f.complete) {
      t.answer.classList.remove("streaming");
      var srcs = r.sources || [];
      if (typeof r.answer === "string") render(t.answer, r.answer, srcs);
      srcs.forEach(function (s) {
        var href = safeURL(s.url);
        var li = el("li");
        if (!href) { t.sources.appendChild(li); return; }
        li.appendChild(link("citation", label(s), href));
        var u = new URL(href);
        li.appendChild(el("span", "where", " " + u.host + u.pathname + u.hash));
        t.sources.appendChild(li);
      });
      delete pending[f.id];
    }
  }

  function link(cls, text, href) {
    var a = el("a", cls, text);
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener";
    a.title = href;
    return a;
  }

  // label names a source by its page and section: "Backups › Restoring".
  function label(s) {
    var t = s.title || s.url;
    var h = s.heading_path || [];
    var last = h.length ? h[h.length - 1] : "";
    return last && last !== t ? t + " › " + last : t;
  }

  // step shows what the agent did: a search as "Searched the docs for …",
  // other funcs and thoughts as they are.
  function step(r) {
    var m = /^Ask (Func|Agent)\[(\w+)\]: ([\s\S]*)$/.exec(r.thought);
    if (m && m[2] === "fixie_query_corpus") return el("li", "action", "Searched the docs for “" + m[3] + "”");
    if (m) return el("li", "action", (m[1] === "Agent" ? "Asked agent " : "Called ") + m[2] + ": " + m[3]);
    return el("li", "thought", r.thought);
  }

  // observation lists the sections a search found, each a link to the
  // exact section; other observations are shown cut short.
  function observation(r) {
    var li = el("li", "observation");
    var srcs = r.sources || [];
    if (!srcs.length) {
      var text = String(r.observation);
      li.textContent = text.length > 300 ? text.slice(0, 300) + "…" : text;
      return li;
    }
    li.appendChild(el("span", "", "Found " + srcs.length + (srcs.length === 1 ? " section:" : " sections:")));
    var ul = el("ul", "found");
    srcs.forEach(function (s) {
      var item = el("li");
      var href = safeURL(s.url);
      if (href) item.appendChild(link("section", label(s), href));
      else item.textContent = label(s);
      ul.appendChild(item);
    });
    li.appendChild(ul);
    return li;
  }

  // inline fills node with a line's text: `inline` code as code and [n] as
  // a link to the n-th source's section.
  function inline(node, text, srcs) {
    var pieces = text.split("`");
    pieces.forEach(function (piece, j) {
      if (j % 2 === 1) { node.appendChild(el("code", "", piece)); return; }
      var re = /\[(\d+(?:,\s*\d+)*)\]/g, last = 0, m;
      while ((m = re.exec(piece)) !== null) {
        node.appendChild(document.createTextNode(piece.slice(last, m.index)));
        m[1].split(/,\s*/).forEach(function (n) {
          var s = srcs[Number(n) - 1];
          var href = s && safeURL(s.url);
          if (href) node.appendChild(link("cite", "[" + n + "]", href));
          else node.appendChild(document.createTextNode("[" + n + "]"));
        });
        last = re.lastIndex;
      }
      node.appendChild(document.createTextNode(piece.slice(last)));
    });
  }

  // render shows the final answer: ``` fences as code blocks, lines that
  // start with "- " as a bulleted list (a list answer: one item per line,
  // each with its citation), other text as paragraphs, `inline` code as
  // code, and [n] as a link to the n-th source's section. Built from DOM
  // nodes, never HTML, so nothing in an answer can run.
  function render(box, text, srcs) {
    box.textContent = "";
    var parts = text.split("```");
    parts.forEach(function (part, i) {
      if (i % 2 === 1) {
        var pre = el("pre");
        pre.appendChild(el("code", "", part.replace(/^[\w+-]*\n/, "").replace(/\n$/, "")));
        box.appendChild(pre);
        return;
      }
      var p = null, ul = null;
      part.replace(/^\n+|\n+$/g, "").split("\n").forEach(function (line) {
        if (line.indexOf("- ") === 0) {
          if (!ul) { ul = el("ul", "items"); box.appendChild(ul); }
          var li = el("li");
          inline(li, line.slice(2), srcs);
          ul.appendChild(li);
          p = null;
          return;
        }
        ul = null;
        if (!p) { p = el("p"); box.appendChild(p); }
        else p.appendChild(document.createTextNode("\n"));
        inline(p, line, srcs);
      });
      box.querySelectorAll("p").forEach(function (q) {
        if (q.textContent.trim() === "") q.remove();
      });
    });
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
