/* The SKILL.md editor: CodeMirror 6 (static/vendor/codemirror.min.js, global CM) takes the
   textarea's place on screen. The textarea stays in the form, hidden and kept in step, so the
   form posts `skill_md` as it does without JavaScript, and htmx's live check (triggered by the
   textarea's input events) runs unchanged. The check's problems become lint marks on their lines. */
(function () {
  "use strict";

  // Colours come from app.css custom properties, so light and dark follow prefers-color-scheme.
  var highlight = CM.HighlightStyle.define([
    { tag: CM.tags.meta, color: "var(--syn-meta)" },
    { tag: CM.tags.definition(CM.tags.propertyName), color: "var(--syn-key)" },
    { tag: [CM.tags.string, CM.tags.special(CM.tags.string)], color: "var(--syn-string)" },
    { tag: [CM.tags.separator, CM.tags.squareBracket, CM.tags.brace, CM.tags.punctuation], color: "var(--fg-muted)" },
    { tag: CM.tags.lineComment, color: "var(--fg-subtle)", fontStyle: "italic" },
    { tag: [CM.tags.labelName, CM.tags.typeName, CM.tags.keyword], color: "var(--syn-keyword)" },
    { tag: CM.tags.heading, color: "var(--syn-heading)", fontWeight: "600" },
    { tag: CM.tags.processingInstruction, color: "var(--syn-mark)" },
    { tag: CM.tags.emphasis, fontStyle: "italic" },
    { tag: CM.tags.strong, fontWeight: "600" },
    { tag: [CM.tags.link, CM.tags.url], color: "var(--accent)" },
    { tag: CM.tags.monospace, color: "var(--syn-code)" },
    { tag: CM.tags.quote, color: "var(--fg-muted)" }
  ]);

  var theme = CM.EditorView.theme({
    "&": { color: "var(--fg)", backgroundColor: "var(--surface)", fontSize: "12.5px" },
    ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "20px" },
    ".cm-content": { caretColor: "var(--fg)", padding: "8px 0" },
    ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--fg)" },
    "&.cm-focused": { outline: "none" },
    ".cm-gutters": { backgroundColor: "var(--surface-2)", color: "var(--fg-subtle)", borderRight: "1px solid var(--border-muted)" },
    ".cm-activeLine": { backgroundColor: "color-mix(in srgb, var(--accent) 6%, transparent)" },
    ".cm-activeLineGutter": { backgroundColor: "color-mix(in srgb, var(--accent) 12%, transparent)", color: "var(--fg)" },
    "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, ::selection":
      { backgroundColor: "color-mix(in srgb, var(--accent) 25%, transparent)" },
    ".cm-searchMatch": { backgroundColor: "var(--warning-soft)", outline: "1px solid var(--warning)" },
    ".cm-searchMatch.cm-searchMatch-selected": { backgroundColor: "color-mix(in srgb, var(--accent) 30%, transparent)" },
    ".cm-selectionMatch": { backgroundColor: "color-mix(in srgb, var(--accent) 12%, transparent)" },
    ".cm-panels": { backgroundColor: "var(--surface-2)", color: "var(--fg)" },
    ".cm-panels.cm-panels-top": { borderBottom: "1px solid var(--border)" },
    // The search panel's controls, compact and on two rows despite app.css's form styles.
    ".cm-panel.cm-search": { fontFamily: "var(--font)", fontSize: "13px", padding: "6px 28px 6px 8px" },
    ".cm-panel.cm-search label": { display: "inline-flex", alignItems: "center", gap: "3px", fontWeight: "400", fontSize: "12px" },
    ".cm-textfield": { width: "16em", minHeight: "26px", padding: "2px 6px", fontSize: "13px", verticalAlign: "middle" },
    ".cm-button": { backgroundImage: "none", backgroundColor: "var(--surface)", color: "var(--fg)", border: "1px solid var(--border)",
      borderRadius: "4px", minHeight: "26px", padding: "0 8px", fontSize: "12px", fontWeight: "400", verticalAlign: "middle" },
    ".cm-tooltip": { backgroundColor: "var(--surface)", color: "var(--fg)", border: "1px solid var(--border)" },
    ".cm-diagnostic-error": { borderLeftColor: "var(--danger)" },
    ".cm-diagnostic-warning": { borderLeftColor: "var(--warning)" },
    ".cm-lintRange-error": { backgroundImage: "none", textDecoration: "underline wavy var(--danger)", textUnderlineOffset: "3px" },
    ".cm-lintRange-warning": { backgroundImage: "none", textDecoration: "underline wavy var(--warning)", textUnderlineOffset: "3px" }
  });

  // The live check's problems, as the server rendered them into #problems (one per line).
  function diagnostics(doc) {
    var found = [];
    document.querySelectorAll("#problems [data-line]").forEach(function (item) {
      var number = parseInt(item.getAttribute("data-line"), 10);
      if (!(number >= 1)) { return; }
      var line = doc.line(Math.min(number, doc.lines));
      var message = item.querySelector(".where + span");
      found.push({
        from: line.from,
        to: line.to,
        severity: item.getAttribute("data-level") === "error" ? "error" : "warning",
        message: (message || item).textContent.trim()
      });
    });
    return found;
  }

  function mount(textarea) {
    var form = textarea.form;
    var label = document.querySelector('label[for="' + textarea.id + '"]');
    if (label && !label.id) { label.id = textarea.id + "-label"; }
    var contentAttributes = { "data-skill-editor": "", "aria-describedby": textarea.getAttribute("aria-describedby") || "" };
    if (label) { contentAttributes["aria-labelledby"] = label.id; }

    var view = new CM.EditorView({
      parent: textarea.parentNode,
      state: CM.EditorState.create({
        doc: textarea.value,
        extensions: [
          CM.lineNumbers(),
          CM.highlightActiveLineGutter(),
          CM.highlightSpecialChars(),
          CM.history(),
          CM.drawSelection(),
          CM.indentOnInput(),
          CM.bracketMatching(),
          CM.highlightActiveLine(),
          CM.highlightSelectionMatches(),
          CM.search({ top: true }),
          CM.lintGutter(),
          CM.yamlFrontmatter({ content: CM.markdownLanguage }),
          CM.syntaxHighlighting(highlight),
          CM.EditorState.tabSize.of(2),
          CM.keymap.of([].concat(CM.searchKeymap, CM.historyKeymap, [CM.indentWithTab], CM.defaultKeymap)),
          CM.EditorView.contentAttributes.of(contentAttributes),
          CM.EditorView.lineWrapping,
          theme,
          CM.EditorView.updateListener.of(function (update) {
            if (!update.docChanged) { return; }
            textarea.value = update.state.doc.toString();
            // htmx's live check and preview listen for the textarea's own input events.
            textarea.dispatchEvent(new Event("input", { bubbles: true }));
          })
        ]
      })
    });
    textarea.hidden = true;
    textarea.removeAttribute("data-skill-editor");
    if (label) {
      label.addEventListener("click", function (event) { event.preventDefault(); view.focus(); });
    }
    if (form) {
      // Belt and braces: whatever submits the form, it posts the text on screen.
      form.addEventListener("submit", function () { textarea.value = view.state.doc.toString(); });
    }
    return view;
  }

  function jumpTo(view, number) {
    var doc = view.state.doc;
    var line = doc.line(Math.max(1, Math.min(number, doc.lines)));
    view.dispatch({
      selection: { anchor: line.from, head: line.to },
      effects: CM.EditorView.scrollIntoView(line.from, { y: "center" })
    });
    view.focus();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var textarea = document.querySelector("textarea[data-code]");
    if (!textarea) { return; }
    var view = mount(textarea);
    var showProblems = function () { view.dispatch(CM.setDiagnostics(view.state, diagnostics(view.state.doc))); };
    showProblems();
    document.addEventListener("htmx:afterSettle", showProblems);
    document.addEventListener("click", function (event) {
      // The skip link puts the caret in the editor (its target, the hidden textarea, cannot take focus).
      if (event.target.closest && event.target.closest("[data-skip-editor]")) {
        event.preventDefault();
        view.focus();
        return;
      }
      var jump = event.target.closest && event.target.closest("[data-jump]");
      if (jump) { event.preventDefault(); jumpTo(view, parseInt(jump.getAttribute("data-jump"), 10)); }
    });
  });
})();
