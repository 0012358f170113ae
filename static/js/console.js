/* Console behaviour that htmx does not cover: keyboard shortcuts, copy buttons, the rule
   editor's skill filter, refused requests shown where the user looks. The SKILL.md editor is
   skill-editor.js. Every page works without this file; it only adds convenience. */
(function () {
  "use strict";

  function typingIn(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }

  // "/" focuses the page's search box; Ctrl/Cmd+S publishes from the editor.
  document.addEventListener("keydown", function (event) {
    if (event.key === "/" && !typingIn(document.activeElement) && !event.ctrlKey && !event.metaKey) {
      var search = document.querySelector("[data-search]");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
    }
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter" && event.target.closest("form[data-send]")) {
      var sendForm = event.target.closest("form[data-send]");
      event.preventDefault();
      if (sendForm.requestSubmit) { sendForm.requestSubmit(); } else { sendForm.submit(); }
    }
    if ((event.ctrlKey || event.metaKey) && (event.key === "s" || event.key === "S")) {
      var form = document.querySelector("form[data-editor]");
      if (form) {
        event.preventDefault();
        var publish = form.querySelector("[data-publish]");
        if (form.requestSubmit) { form.requestSubmit(publish || undefined); } else { form.submit(); }
      }
    }
  });

  document.addEventListener("click", function (event) {
    var copy = event.target.closest && event.target.closest("[data-copy]");
    if (copy) {
      var source = document.getElementById(copy.getAttribute("data-copy"));
      if (source && navigator.clipboard) {
        navigator.clipboard.writeText(source.textContent.trim()).then(function () {
          var label = copy.textContent;
          copy.textContent = "Copied";
          setTimeout(function () { copy.textContent = label; }, 1500);
        });
      }
    }
  });
  // "N picked" beside a list of checkboxes (the rule editor's skill picker) follows the ticks.
  document.addEventListener("change", function (event) {
    var list = event.target.closest && event.target.closest(".picker-list");
    var counter = list && document.querySelector('[data-picked-count="' + list.id + '"]');
    if (counter) { counter.textContent = list.querySelectorAll("input:checked").length + " picked"; }
  });
  // A picked folder (<input webkitdirectory>): Django keeps only each file's last name part, so
  // the relative paths go along in a hidden field, in upload order. Without this script the
  // folder picker stays hidden and a zip is the way to upload.
  document.querySelectorAll("[data-folder-upload]").forEach(function (field) { field.hidden = false; });
  document.addEventListener("change", function (event) {
    var picker = event.target.closest && event.target.closest("[data-folder-upload]");
    if (!picker || !event.target.matches("input[type=file]")) { return; }
    var files = Array.prototype.slice.call(event.target.files);
    picker.querySelector("input[name=folder_paths]").value =
      JSON.stringify(files.map(function (file) { return file.webkitRelativePath || file.name; }));
    var summary = picker.querySelector("[data-folder-summary]");
    if (summary && files.length) {
      var top = (files[0].webkitRelativePath || "").split("/")[0];
      summary.textContent = files.length + " file" + (files.length === 1 ? "" : "s") + " from the folder " + top + ".";
    }
  });
  // A list filtered as you type (the rule editor's skill picker): hides the items whose
  // data-name does not contain the text; checked items stay visible so a choice is never hidden.
  document.addEventListener("input", function (event) {
    var listId = event.target.getAttribute && event.target.getAttribute("data-filter-list");
    var list = listId && document.getElementById(listId);
    if (!list) { return; }
    var text = event.target.value.trim().toLowerCase();
    list.querySelectorAll("[data-name]").forEach(function (item) {
      var checked = item.querySelector("input:checked");
      item.hidden = !!text && !checked && item.getAttribute("data-name").toLowerCase().indexOf(text) === -1;
    });
  });

  // The eval run form's cost in agent turns (cases × repeats, twice with a baseline) follows
  // its fields; the server renders the same figure for the values it was sent with.
  function showRunCost(form) {
    var cost = form.querySelector("[data-run-cost]");
    if (!cost) { return; }
    var cases = parseInt(cost.getAttribute("data-run-cost"), 10);
    var repeat = parseInt(form.querySelector("input[name=repeat]").value, 10) || 1;
    var baseline = form.querySelector("input[name=baseline]").checked;
    var turns = cases * repeat * (baseline ? 2 : 1);
    cost.querySelector("[data-run-turns]").textContent = turns.toLocaleString("en") + " agent turn" + (turns === 1 ? "" : "s");
    cost.querySelector("[data-run-sum]").textContent = cases + " case" + (cases === 1 ? "" : "s") + " × " + repeat +
      " repeat" + (repeat === 1 ? "" : "s") + (baseline ? " × 2 with the baseline" : "");
  }
  ["input", "change"].forEach(function (type) {
    document.addEventListener(type, function (event) {
      var form = event.target.closest && event.target.closest("form");
      if (form && form.querySelector("[data-run-cost]")) { showRunCost(form); }
    });
  });

  // htmx 2 leaves 4xx answers unswapped. A view answers an htmx request's bad input with the
  // fragment it asked for, the message beside the field (the rule tester's bad label, the
  // playground's refused message), so it goes in place, as the page shows it without JavaScript.
  // A whole page (a 403 or 404 from outside the view) is no fragment, and a request that swaps
  // nothing has no place for it: both are left to the notice below.
  function isFragment(xhr) {
    var html = (xhr.getResponseHeader("Content-Type") || "").indexOf("text/html") === 0;
    return html && !/^\s*<!doctype|<html[\s>]/i.test(xhr.responseText);
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    // detail.elt is the target; the element that made the request carries the hx-swap.
    var source = event.detail.requestConfig && event.detail.requestConfig.elt;
    var swap = source && source.closest("[hx-swap]");
    var swapsNothing = swap && /^\s*none/.test(swap.getAttribute("hx-swap"));
    if (xhr.status >= 400 && xhr.status < 500 && !swapsNothing && isFragment(xhr)) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // A request htmx does not swap in (a 5xx, a 4xx page, no connection) would otherwise change
  // nothing on screen: say what happened where flash messages appear, until the same control is
  // tried again. A 503 names the service that is down (plain text); a 4xx page its heading.
  var failedElt = null;

  function showProblem(elt, text) {
    var box = document.getElementById("request-problem");
    if (!box) { return; }
    var item = document.createElement("p");
    item.className = "flash flash-error";
    item.textContent = text;
    box.replaceChildren(item);
    box.hidden = false;
    failedElt = elt;
  }

  function saidBy(xhr) {
    var type = xhr.getResponseHeader("Content-Type") || "";
    if (type.indexOf("text/plain") === 0) { return xhr.responseText.trim().slice(0, 300); }
    if (type.indexOf("text/html") !== 0 || xhr.status >= 500) { return ""; }
    var page = new DOMParser().parseFromString(xhr.responseText, "text/html");  // inert: no scripts run
    var heading = page.querySelector("[role=alert], main h1, h1, title");
    return heading ? heading.textContent.replace(/\s+/g, " ").trim().slice(0, 300) : "";
  }

  // On a narrow screen the main navigation scrolls sideways; start it at the current page so
  // "Turns" or "Audit" is not hidden past the right edge on the page it names.
  var current = document.querySelector(".mainnav [aria-current=page]");
  if (current && current.parentNode.scrollWidth > current.parentNode.clientWidth) {
    current.parentNode.scrollLeft = current.offsetLeft - current.parentNode.offsetLeft - 16;
  }

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var said = saidBy(xhr);
    showProblem(event.detail.elt, said || "The server could not complete this request (HTTP " + xhr.status +
      "). Try again; if it keeps failing, an admin can find the error in the server log.");
  });
  document.addEventListener("htmx:sendError", function (event) {
    showProblem(event.detail.elt, "The server could not be reached. Check the connection and try again.");
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    var box = document.getElementById("request-problem");
    if (box && event.detail.elt === failedElt) { box.hidden = true; failedElt = null; }
  });
})();
