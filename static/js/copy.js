// Copy buttons: <button data-copy-from="ID" hidden> copies the value of the field #ID (or the
// text of any other element #ID) and says so in [data-copy-status="ID"]. The buttons stay
// hidden when JavaScript does not run. No inline scripts: the CSP forbids them.
(function () {
  "use strict";

  function reveal(root) {
    if (!root.querySelectorAll) return;
    root.querySelectorAll("button[data-copy-from]").forEach(function (button) {
      button.hidden = false;
    });
  }

  function say(id, text) {
    var status = document.querySelector('[data-copy-status="' + id + '"]');
    if (status) status.textContent = text;
  }

  function selectAndCopy(source) {
    if (source.select) {
      source.select();
    } else {
      window.getSelection().selectAllChildren(source);
    }
    return Boolean(document.execCommand && document.execCommand("copy"));
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy-from]");
    if (!button) return;
    var id = button.getAttribute("data-copy-from");
    var source = document.getElementById(id);
    if (!source) return;
    var text = source.matches("input, textarea") ? source.value : source.textContent.trim();
    var done = function () { say(id, "Copied."); };
    var failed = function () {
      say(id, selectAndCopy(source) ? "Copied." : "Selected: press Ctrl+C (or ⌘C) to copy.");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, failed);
    } else {
      failed();
    }
  });

  document.addEventListener("DOMContentLoaded", function () { reveal(document); });
  document.addEventListener("htmx:load", function (event) { reveal(event.detail.elt); });
})();
