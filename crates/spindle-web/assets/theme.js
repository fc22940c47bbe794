// The page's theme, applied before the page is drawn: index.html loads this classic script in
// <head>, ahead of the stylesheet's first paint, so a dark page never flashes light (a module
// script runs too late for that). "auto" (no data-theme) follows prefers-color-scheme in
// app.css; "light" or "dark" is the toggle's choice, kept in localStorage. The toggle (the
// header's #theme-choice) is wired here too once the document is parsed.
(function () {
  var KEY = "spindle.theme";
  function stored() {
    try { var v = localStorage.getItem(KEY); return v === "light" || v === "dark" ? v : "auto"; } catch (_) { return "auto"; }
  }
  function apply(choice) {
    if (choice === "light" || choice === "dark") document.documentElement.dataset.theme = choice;
    else delete document.documentElement.dataset.theme;
  }
  apply(stored());
  document.addEventListener("DOMContentLoaded", function () {
    var select = document.getElementById("theme-choice");
    if (!select) return;
    select.value = stored();
    select.addEventListener("change", function () {
      try {
        if (select.value === "auto") localStorage.removeItem(KEY);
        else localStorage.setItem(KEY, select.value);
      } catch (_) { /* private mode: the choice lasts for this page only */ }
      apply(select.value);
    });
  });
  // Another tab changed it.
  window.addEventListener("storage", function (event) {
    if (event.key !== KEY) return;
    apply(stored());
    var select = document.getElementById("theme-choice");
    if (select) select.value = stored();
  });
})();
