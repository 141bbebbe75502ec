// Keyboard first: digits choose, u / e say "cannot decide" / "cannot be judged", Enter
// submits, n / p move through a list, ? opens the help. No inline script anywhere (the
// Content-Security-Policy forbids it); this file is the console's only script.
(function () {
  "use strict";
  function typing(target) {
    var tag = target && target.tagName;
    return tag === "TEXTAREA" || (tag === "INPUT" && target.type !== "radio") || tag === "SELECT";
  }
  var submitted = false;
  document.addEventListener("submit", function (event) {
    // One submission per page: a double click sends once (the request id covers a reload).
    if (event.target.id === "review-form" || event.target.dataset.once !== undefined) {
      if (submitted) { event.preventDefault(); return; }
      submitted = true;
    }
  });
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) { return; }
    var key = event.key;
    if (key === "?") {
      var help = document.getElementById("help");
      if (help && !help.open) { help.showModal(); event.preventDefault(); }
      return;
    }
    var choice = document.querySelector('input[type="radio"][data-key="' + CSS.escape(key) + '"]');
    if (choice) {
      choice.checked = true;
      choice.focus();
      event.preventDefault();
      return;
    }
    if (key === "Enter") {
      var form = document.getElementById("review-form") || document.querySelector("form[data-enter]");
      if (form && form.querySelector("input:checked")) {
        form.requestSubmit();
        event.preventDefault();
      }
      return;
    }
    if (key === "n" || key === "p") {
      var items = Array.prototype.slice.call(document.querySelectorAll("[data-item]"));
      if (!items.length) { return; }
      var at = items.indexOf(document.activeElement);
      var next = key === "n" ? Math.min(at + 1, items.length - 1) : Math.max(at - 1, 0);
      items[at === -1 ? 0 : next].focus();
      event.preventDefault();
    }
  });
})();
