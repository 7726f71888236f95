// The web console's one script (served from the binary; no inline script,
// Content-Security-Policy default-src 'self'). On an instance page it
// follows /events for the instance's tree: new events are appended to the
// events table and the page's live sections are reloaded. A section marked
// data-poll (a running batch operation) is reloaded every data-poll ms.
// A form's JSON fields are checked before the form is sent. A list is
// reloaded every few seconds while no form is being edited.
(function () {
  "use strict";
  var pending = null;

  // Fetches this page again and swaps in its [data-live] sections.
  function reload() {
    pending = null;
    return fetch(window.location.href, { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (el) {
          // A section being edited (or showing a refusal) is left as it is.
          if (el.contains(document.activeElement) || el.querySelector(".refused")) {
            return;
          }
          var fresh = doc.querySelector('[data-live="' + el.dataset.live + '"]');
          if (fresh) {
            el.replaceWith(document.importNode(fresh, true));
          }
        });
      })
      .catch(function () {});
  }

  // A field marked data-json must hold a JSON object (or be empty): the
  // form is not sent otherwise, and the error is shown beside it. The
  // server checks it again.
  document.addEventListener("submit", function (e) {
    var bad = null;
    e.target.querySelectorAll("[data-json]").forEach(function (f) {
      var err = f.form.querySelector(".json-error");
      var text = f.value.trim();
      var msg = "";
      if (text !== "") {
        try {
          var v = JSON.parse(text);
          if (v === null || typeof v !== "object" || Array.isArray(v)) {
            msg = "not a JSON object";
          }
        } catch (x) {
          msg = "not valid JSON: " + x.message;
        }
      }
      if (err) {
        err.textContent = msg; // text only
      }
      if (msg && !bad) {
        bad = f;
      }
    });
    if (bad) {
      e.preventDefault();
      bad.focus();
    }
  });

  // A list page (a section marked data-refresh) is reloaded every
  // data-refresh ms, but not while a form of the page is being edited:
  // from the first keystroke in a form, or while one of its fields has
  // the focus. Each reload and each tick skipped is counted on <body>
  // (data-refreshes, data-refresh-skipped).
  var edited = false;
  document.addEventListener("input", function (e) {
    if (e.target && e.target.form) {
      edited = true;
    }
  });
  function editing() {
    var a = document.activeElement;
    return edited || !!(a && a.form);
  }
  function count(name) {
    document.body.dataset[name] = String(Number(document.body.dataset[name] || 0) + 1);
  }
  function refresh() {
    var el = document.querySelector("[data-refresh]");
    if (!el) {
      return;
    }
    setTimeout(function () {
      if (editing()) {
        count("refreshSkipped");
        refresh();
        return;
      }
      reload().then(function () {
        count("refreshes");
        refresh();
      });
    }, Number(el.dataset.refresh) || 5000);
  }
  refresh();

  // A click on a diagram shows it at its own size, another fits it to the
  // page's width again.
  document.addEventListener("click", function (e) {
    if (e.target && e.target.matches && e.target.matches("img.diagram")) {
      e.target.classList.toggle("zoomed");
    }
  });

  function poll() {
    var el = document.querySelector("[data-poll]");
    if (!el) {
      return;
    }
    setTimeout(function () { reload().then(poll); }, Number(el.dataset.poll) || 2000);
  }
  poll();

  var live = document.getElementById("live");
  if (!live || !window.EventSource) {
    return;
  }
  var table = document.getElementById("events");
  var url = "/events?instance=" + encodeURIComponent(live.dataset.instance) +
    "&after=" + encodeURIComponent(live.dataset.after || "0");

  function cell(row, text) {
    var td = document.createElement("td");
    td.textContent = text; // text only: never parsed as HTML
    row.appendChild(td);
    return td;
  }

  var es = new EventSource(url);
  es.addEventListener("wf", function (msg) {
    var ev;
    try {
      ev = JSON.parse(msg.data);
    } catch (e) {
      return;
    }
    var row = document.createElement("tr");
    row.className = "new";
    cell(row, String(ev.sequence));
    cell(row, ev.time || "");
    cell(row, ev.type);
    cell(row, ev.instanceId);
    cell(row, ev.actor);
    var code = document.createElement("code");
    code.textContent = ev.data;
    cell(row, "").appendChild(code);
    table.appendChild(row);
    live.dataset.after = String(ev.sequence);
    if (!pending) {
      pending = setTimeout(reload, 300);
    }
  });
})();
