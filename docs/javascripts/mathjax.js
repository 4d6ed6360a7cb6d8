// MathJax 3 reads the \( \) and \[ \] spans that pymdownx.arithmatex (generic mode) writes;
// the script itself is served from the site (assets/mathjax/, copied by tools/mkdocs_hooks.py).
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};

// material's instant navigation swaps pages without reloading: typeset each new page
if (typeof document$ !== "undefined") {
  document$.subscribe(() => {
    if (window.MathJax && MathJax.typesetPromise) {
      
      MathJax.typesetClear();
      MathJax.texReset();
      MathJax.typesetPromise();
    }
  });
}
