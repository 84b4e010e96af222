// The time-zone question (templates/_partials/_time_zone_question.html): select the browser's own
// zone (Intl) in <select data-browser-zone> when the list has it, and say which it is. Without
// JavaScript the list keeps the zone the user has. No inline scripts: the CSP forbids them.
(function () {
  "use strict";

  function fill(root) {
    if (!root.querySelectorAll) return;
    var zone = window.Intl && Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (!zone) return;
    root.querySelectorAll("select[data-browser-zone]").forEach(function (select) {
      var known = Array.prototype.some.call(select.options, function (option) {
        return option.value === zone;
      });
      if (!known) return;
      select.value = zone;
      var form = select.closest("section");
      var said = form && form.querySelector("[data-browser-zone-said]");
      if (said) {
        said.querySelector("[data-browser-zone-name]").textContent = zone.replace(/_/g, " ");
        said.hidden = false;
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () { fill(document); });
  document.addEventListener("htmx:load", function (event) { fill(event.detail.elt); });
})();
