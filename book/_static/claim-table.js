// The scorecard's claim table (reporting/claim_table.py), filtered by paper and verdict and sorted by effect in the
// reader's browser: the built book works offline, so this reads the rows' data attributes and asks for nothing.
document.addEventListener("DOMContentLoaded", () => {
  for (const table of document.querySelectorAll("table.claim-table")) {
    const body = table.tBodies[0];
    const rows = [...body.rows];
    const values = (key) => [...new Set(rows.map((r) => r.dataset[key]))].sort();
    const bar = document.createElement("div");
    bar.className = "claim-filter";
    const select = (label, key, options) => {
      const wrap = document.createElement("label");
      wrap.textContent = label + " ";
      const box = document.createElement("select");
      box.dataset.key = key;
      for (const value of ["", ...options]) box.add(new Option(value || "all", value));
      box.addEventListener("change", apply);
      wrap.append(box);
      bar.append(wrap);
      return box;
    };
    const filters = [
      select("paper", "paper", values("paper")),
      select("verdict, every seed", "verdict", values("verdict")),
      select("fresh seeds alone", "fresh", values("fresh")),
    ];
    const shown = document.createElement("span");
    bar.append(shown);
    function apply() {
      let n = 0;
      for (const row of rows) {
        const keep = filters.every((f) => !f.value || row.dataset[f.dataset.key] === f.value);
        row.hidden = !keep;
        n += keep;
      }
      shown.textContent = `showing ${n} of ${rows.length} claims`;
    }
    const effect = table.tHead.querySelector("th.effect");
    let direction = 0;
    effect.classList.add("sortable");
    effect.title = "sort by effect (the first comparison's)";
    effect.addEventListener("click", () => {
      direction = direction === 1 ? -1 : 1;
      const key = (r) => (r.dataset.effect === "" ? NaN : Number(r.dataset.effect));
      const sorted = [...rows].sort((a, b) => {
        const x = key(a), y = key(b);
        if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) - Number.isNaN(y);
        return direction * (x - y);
      });
      body.append(...sorted);
    });
    table.parentElement.insertBefore(bar, table);
    apply();
  }
});
