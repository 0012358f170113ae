/* Console behaviour that htmx does not cover: keyboard shortcuts, the editor's line gutter and
   jump-to-line, copy buttons, the rule editor's skill filter. Every page works without this file; it only adds convenience. */
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

  // --- the SKILL.md editor: a line-number gutter kept in step with the textarea ----------
  function editorParts() {
    var textarea = document.querySelector("textarea[data-code]");
    var gutter = textarea && textarea.parentNode.querySelector(".gutter");
    return textarea && gutter ? { textarea: textarea, gutter: gutter } : null;
  }

  function problemLines() {
    var marks = {};
    document.querySelectorAll("#problems [data-line]").forEach(function (item) {
      var line = item.getAttribute("data-line");
      if (marks[line] !== "bad") { marks[line] = item.getAttribute("data-level") === "error" ? "bad" : "warn"; }
    });
    return marks;
  }

  function renderGutter() {
    var parts = editorParts();
    if (!parts) { return; }
    var count = parts.textarea.value.split("\n").length;
    var marks = problemLines();
    var html = [];
    for (var i = 1; i <= count; i++) {
      html.push(marks[i] ? '<span class="' + marks[i] + '">' + i + "</span>" : String(i));
    }
    parts.gutter.innerHTML = html.join("\n");
    parts.gutter.scrollTop = parts.textarea.scrollTop;
  }

  function jumpTo(line) {
    var parts = editorParts();
    if (!parts) { return; }
    var lines = parts.textarea.value.split("\n");
    line = Math.max(1, Math.min(line, lines.length));
    var start = 0;
    for (var i = 0; i < line - 1; i++) { start += lines[i].length + 1; }
    parts.textarea.focus();
    parts.textarea.setSelectionRange(start, start + lines[line - 1].length);
    var lineHeight = parseFloat(getComputedStyle(parts.textarea).lineHeight) || 20;
    parts.textarea.scrollTop = Math.max(0, (line - 4) * lineHeight);
    renderGutter();
  }

  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("textarea[data-code]")) { renderGutter(); }
  });
  document.addEventListener("scroll", function (event) {
    var parts = editorParts();
    if (parts && event.target === parts.textarea) { parts.gutter.scrollTop = parts.textarea.scrollTop; }
  }, true);
  document.addEventListener("click", function (event) {
    var jump = event.target.closest && event.target.closest("[data-jump]");
    if (jump) { event.preventDefault(); jumpTo(parseInt(jump.getAttribute("data-jump"), 10)); }
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

  // htmx leaves 4xx answers unswapped; forms marked data-swap-errors show them in place (the
  // rule tester's bad label, the playground's refused message), as the page would without JS.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if (status >= 400 && status < 500 && event.detail.elt.closest("[data-swap-errors]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // A request htmx does not swap in (a 5xx, a 4xx outside data-swap-errors, no connection)
  // would otherwise change nothing on screen: say what happened where flash messages appear,
  // until the same control is tried again. A 503 names the service that is down (plain text).
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

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var plain = (xhr.getResponseHeader("Content-Type") || "").indexOf("text/plain") === 0;
    var said = plain ? xhr.responseText.trim().slice(0, 300) : "";
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

  document.addEventListener("htmx:afterSwap", renderGutter);
  document.addEventListener("DOMContentLoaded", renderGutter);
})();
