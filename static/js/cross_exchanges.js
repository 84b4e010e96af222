// Live countdowns: every element with data-countdown="<ISO time>" shows the time left to it.
// One timer reads the page each second, so parts swapped in by htmx count down too.
function describeLeft(milliseconds) {
  if (milliseconds <= 0) return "(expired; reload the page)";
  const seconds = Math.floor(milliseconds / 1000);
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const parts = hours ? [`${hours} h`, `${minutes % 60} min`] : [`${minutes} min`, `${seconds % 60} s`];
  return `(${parts.join(" ")} left)`;
}

function updateCountdowns() {
  for (const element of document.querySelectorAll("[data-countdown]")) {
    const text = describeLeft(Date.parse(element.dataset.countdown) - Date.now());
    if (element.textContent !== text) element.textContent = text;
  }
}

updateCountdowns();
setInterval(updateCountdowns, 1000);
