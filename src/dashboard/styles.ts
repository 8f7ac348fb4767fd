/** The dashboard's stylesheet: dark text on white (contrast above 7:1), one column on a phone. */
export const dashboardStyles = `
:root { --ink: #1a1a1a; --muted: #4a4a4a; --line: #c8c8c8; --accent: #0b4f8a; --bad: #a4161a; --bg: #ffffff; --panel: #f4f6f8; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { display: flex; flex-wrap: wrap; align-items: baseline; justify-content: space-between; gap: .5rem 1rem; padding: .75rem 1rem; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.4rem; margin: 0; }
h2 { font-size: 1.2rem; }
h3 { font-size: 1rem; margin: 1rem 0 .5rem; }
main { padding: 0 1rem 2rem; max-width: 1100px; margin: 0 auto; }
#status { margin: 0; color: var(--muted); }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: .5rem; background: var(--bg); padding: .25rem .5rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
form { display: grid; gap: .35rem; max-width: 24rem; }
input, select, button { font: inherit; padding: .5rem .6rem; border: 1px solid #767676; border-radius: 4px; color: var(--ink); background: var(--bg); min-height: 44px; }
button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; margin-top: .5rem; }
:focus-visible { outline: 3px solid #f2a900; outline-offset: 2px; }
.error { color: var(--bad); min-height: 1.5em; }
.toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; margin: 1rem 0; }
.toolbar button { margin-top: 0; margin-left: auto; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(9rem, 1fr)); gap: .75rem; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; }
.card h3 { margin: 0; font-size: .9rem; color: var(--muted); font-weight: 600; }
#board[data-stale] .card { border-style: dashed; }
#board[data-stale] .card output { color: var(--muted); }
.card output { display: block; font-size: 2rem; font-weight: 700; font-variant-numeric: tabular-nums; }
.chart { width: 100%; min-height: 260px; }
.columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: 1rem; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); }
td.num, th.num { text-align: right; }
caption { text-align: left; color: var(--muted); padding-bottom: .25rem; }
.bar { display: inline-block; height: .7rem; background: var(--accent); vertical-align: middle; margin-left: .35rem; }
.table-scroll { overflow-x: auto; }
details { margin: .5rem 0; }
@media (max-width: 480px) { .card output { font-size: 1.6rem; } main { padding: 0 .5rem 1rem; } }
`;
