// SPDX-License-Identifier: MIT
// The Cluster page's Hosts card on a real cluster view (run by tests/cluster/test_view_page.py,
// which starts clickhouse-server and the node daemons): node cluster_hosts.mjs BASE_URL JOB_ID PNG.
// Opens the page in Debian's chromium and checks every row against the job's JSON
// (ranks_detail, cluster_view, clocks) and /ranks: host, node, ranks, last step shipped, steps
// behind (a "behind" badge exactly on the nodes behind), clock offset ± spread, aligned, and
// stragglers; no console error. Exits 1 with the difference; writes the screenshot to PNG.
import { chromium } from 'playwright-core';

const [base, id, png] = process.argv.slice(2);
const get = async (p) => (await fetch(base + p)).json();
const job = await get(`/api/v1/jobs/${id}`);
const ranks = await get(`/api/v1/jobs/${id}/ranks`);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
let code = 0;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${base}/#/job/${id}/cluster`);
  await page.waitForSelector('[data-table="cluster-hosts"]', { timeout: 30000 });
  const fmtUs = (us) => page.evaluate(async (v) => (await import('/js/dom.js')).fmtUs(v), us);
  const rows = await page.$$eval('[data-table="cluster-hosts"] tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  const nodes = new Map(job.cluster_view.nodes.map((n) => [n.node, n]));
  const clocks = new Map(job.clocks.hosts.map((h) => [h.host, h]));
  const want = [];
  const seen = new Set();
  for (const r of job.ranks_detail) {
    const host = r.host || r.node;
    if (seen.has(`${host}/${r.node}`)) continue;
    seen.add(`${host}/${r.node}`);
    const rs = job.ranks_detail.filter((x) => (x.host || x.node) === host && x.node === r.node);
    const n = nodes.get(r.node);
    const h = clocks.get(host);
    let offset = '0 (reference)';
    if (h.reason !== 'reference') offset = h.aligned ? `${await fmtUs(h.offset_us)} ± ${await fmtUs(h.spread_us)}` : `not applied (estimate ${await fmtUs(h.estimate_us)} ± ${await fmtUs(h.spread_us)})`;
    const strag = rs.filter((x) => ranks.ranks.find((y) => y.rank === x.rank).straggler).length;
    want.push([host, r.node, rs.map((x) => x.rank).join(', '), String(n.last_step),
      n.steps_behind > 0 ? `${n.steps_behind}behind` : String(n.steps_behind), offset,
      h.aligned ? h.reason : `not aligned ${h.reason}`, strag ? `${strag}straggler` : String(strag)]);
  }
  const badged = await page.$$eval('[data-table="cluster-hosts"] tbody tr', (trs) => trs
    .filter((tr) => [...tr.querySelectorAll('.badge.bad')].some((b) => b.textContent === 'behind')).map((tr) => tr.children[1].textContent));
  const behind = job.cluster_view.nodes.filter((n) => n.steps_behind > 0).map((n) => n.node);
  const windowLine = await page.textContent('#cluster-window');
  const problems = [];
  if (JSON.stringify(rows) !== JSON.stringify(want)) problems.push(`rows: got ${JSON.stringify(rows)}, want ${JSON.stringify(want)}`);
  if (JSON.stringify(badged) !== JSON.stringify(behind)) problems.push(`badged behind: ${JSON.stringify(badged)}, the API: ${JSON.stringify(behind)}`);
  if (!windowLine.includes(`step ${job.cluster_view.step_window},`)) problems.push(`window line: ${windowLine}`);
  if (errors.length) problems.push(`console errors: ${errors.join('; ')}`);
  await page.screenshot({ path: png, fullPage: true });
  if (problems.length) {
    console.error(problems.join('\n'));
    code = 1;
  } else {
    console.log(JSON.stringify(rows));
  }
} finally {
  await browser.close();
}
process.exit(code);
