// semcat /ui: a failed action is shown, never dropped (issue 38 item 5).
//
// htmx does not swap 4xx/5xx answers by default, so a refused accept, a stale CSRF token, a read
// token's 403 or a 409 conflict would leave the page as if nothing happened. Here:
// - an HTML error answer (the /ui routes render their failures: the item's row or the group with
//   the server's message and a hint) is swapped in like a success;
// - a JSON error answer (the Guard's {error, message, details}: 401, 403, 413, 415, 421, 429) is
//   shown in the target with its message and a hint;
// - no answer at all (the server is down) is shown in the target too.
// Text is set with textContent only: nothing the server says is parsed as HTML here.
(function () {
  "use strict";
  // the hints by HTTP status: the server's table (mcp_server.http.ui FAILURE_HINTS), in the page
  function hint(status) {
    var hints = {};
    var el = document.getElementById("failure-hints");
    try { hints = el ? JSON.parse(el.textContent) : {}; } catch (e) { hints = {}; }
    if (hints[String(status)]) return hints[String(status)];
    return status >= 500 || status === 0 ? "The server did not finish; reload the page to see what was written."
                                         : "Nothing was written; reload the page and try again.";
  }

  function show(target, status, message) {
    var box = document.createElement(target && target.tagName === "TR" ? "td" : "div");
    box.className = "failed";
    box.setAttribute("data-failed", String(status));
    var msg = document.createElement("span");
    msg.className = "message";
    msg.textContent = message;
    var why = document.createElement("span");
    why.className = "hint";
    why.textContent = hint(status);
    box.appendChild(msg);
    box.appendChild(document.createElement("br"));
    box.appendChild(why);
    if (target && target.tagName === "TR") {
      box.colSpan = 5;
      target.className = "failed";
      target.setAttribute("data-failed", String(status));
      while (target.cells.length > 1) target.deleteCell(1);
      target.appendChild(box);
    } else if (target) {
      target.classList.add("failed");
      target.setAttribute("data-failed", String(status));
      target.insertBefore(box, target.firstChild);
    } else {
      var flash = document.getElementById("flash");
      if (flash) { flash.textContent = ""; flash.appendChild(box); }
    }
  }

  document.addEventListener("htmx:beforeSwap", function (evt) {
    var xhr = evt.detail.xhr;
    if (!xhr || xhr.status < 400) return;
    var type = xhr.getResponseHeader("Content-Type") || "";
    if (type.indexOf("text/html") === 0) {  // a /ui failure fragment: show it
      evt.detail.shouldSwap = true;
      evt.detail.isError = false;
      return;
    }
    var message = xhr.status + " " + (xhr.statusText || "error");
    try {
      var body = JSON.parse(xhr.responseText);
      if (body && typeof body.message === "string") message = body.message;
    } catch (e) { /* not JSON: keep the status line */ }
    evt.detail.shouldSwap = false;
    show(evt.detail.target, xhr.status, message);
  });

  document.addEventListener("htmx:sendError", function (evt) {
    show(evt.detail.target, 0, "The server did not answer (it may be down or restarting).");
  });
})();
