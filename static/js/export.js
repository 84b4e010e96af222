// CSV exports with a progress bar and a Cancel button.
//
// An export link (`a[data-export]`) still works as a plain download without JavaScript. With
// JavaScript, the file is fetched as a stream: rows are counted as they arrive against the total
// the server announces in `X-Export-Total`, Cancel aborts the request (the server then stops
// reading pages), and the finished file is handed to the browser as a download.
(function () {
  "use strict";

  function filenameOf(response) {
    var disposition = response.headers.get("Content-Disposition") || "";
    var match = /filename="?([^";]+)"?/.exec(disposition);
    return match ? match[1] : "export.csv";
  }

  function save(chunks, filename) {
    var url = URL.createObjectURL(new Blob(chunks, { type: "text/csv" }));
    var link = document.createElement("a");
    link.href = url;
    link.download = filename;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }

  function start(anchor, panel) {
    var bar = panel.querySelector("progress");
    var status = panel.querySelector("[data-export-status]");
    var cancel = panel.querySelector("[data-export-cancel]");
    var controller = new AbortController();
    var decoder = new TextDecoder();
    var chunks = [];
    var lines = 0;
    var tail = "";

    function say(text) { status.textContent = text; }
    function finish() { cancel.hidden = true; anchor.removeAttribute("aria-disabled"); }

    panel.hidden = false;
    cancel.hidden = false;
    anchor.setAttribute("aria-disabled", "true");
    bar.removeAttribute("value");
    say("Starting the export…");
    cancel.onclick = function () { controller.abort(); };

    fetch(anchor.href, { signal: controller.signal, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) {
          return response.text().then(function () {
            throw new Error(response.status >= 500
              ? "The payment service is unavailable. Try again in a moment."
              : "The export could not start: check the filters.");
          });
        }
        var total = parseInt(response.headers.get("X-Export-Total") || "0", 10);
        var reader = response.body.getReader();
        function pump() {
          return reader.read().then(function (step) {
            if (step.done) { return; }
            chunks.push(step.value);
            var text = tail + decoder.decode(step.value, { stream: true });
            lines += text.split("\n").length - 1;
            tail = text.slice(text.lastIndexOf("\n") + 1);
            var rows = Math.max(lines - 1, 0);
            if (total > 0) {
              bar.max = total;
              bar.value = Math.min(rows, total);
              say(rows + " of " + total + " rows");
            } else {
              say(rows + " rows");
            }
            return pump();
          });
        }
        return pump().then(function () {
          var last = new Blob(chunks).slice(-400);
          return last.text().then(function (ending) {
            if (ending.indexOf("EXPORT INCOMPLETE") !== -1) {
              throw new Error("The export failed part of the way through. Export again.");
            }
            save(chunks, filenameOf(response));
            bar.value = bar.max;
            say("Done: " + Math.max(lines - 1, 0) + " rows.");
          });
        });
      })
      .catch(function (error) {
        say(error.name === "AbortError" ? "Export cancelled." : error.message);
      })
      .then(finish);
  }

  document.addEventListener("click", function (event) {
    var anchor = event.target.closest("a[data-export]");
    if (!anchor || !window.fetch || !window.ReadableStream) { return; }
    var panel = document.getElementById(anchor.dataset.export);
    if (!panel) { return; }
    event.preventDefault();
    if (anchor.getAttribute("aria-disabled") === "true") { return; }
    start(anchor, panel);
  });
})();
