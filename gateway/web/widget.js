// kgagent chat widget: <script src="https://your-kgagent/widget.js"
// data-collection="python" data-api-key="..." async></script> adds a button
// that opens the docs chat in a panel. The gateway must list the embedding
// site in its CORS origins when an API key is used from the page.
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script) return;
  var origin = new URL(script.src, location.href).origin;
  var params = new URLSearchParams({ embed: "1" });
  if (script.dataset.collection) params.set("collection", script.dataset.collection);
  if (script.dataset.apiKey) params.set("api_key", script.dataset.apiKey);
  var button = document.createElement("button");
  button.id = "kgagent-widget-button";
  button.type = "button";
  button.textContent = script.dataset.label || "Ask the docs";
  button.style.cssText = "position:fixed;right:20px;bottom:20px;z-index:2147483000;padding:12px 18px;border:0;border-radius:24px;background:#2f6feb;color:#fff;font:15px system-ui,sans-serif;cursor:pointer;box-shadow:0 4px 12px rgba(0,0,0,.2)";
  var frame = document.createElement("iframe");
  frame.id = "kgagent-widget-frame";
  frame.title = "Docs chat";
  frame.src = origin + "/?" + params.toString();
  frame.style.cssText = "position:fixed;right:20px;bottom:76px;width:380px;height:560px;max-height:80vh;border:1px solid #d0d5dd;border-radius:12px;background:#fff;z-index:2147483000;display:none;box-shadow:0 8px 24px rgba(0,0,0,.2)";
  button.addEventListener("click", function () {
    frame.style.display = frame.style.display === "none" ? "block" : "none";
  });
  function mount() { document.body.appendChild(frame); document.body.appendChild(button); }
  if (document.body) mount(); else document.addEventListener("DOMContentLoaded", mount);
})();
