// TEMPORARY (issue #43 phase 3): where a hand-off's and a bridge's wait goes, from the app's
// ONCELINE_WAIT_TRACE marks and the bench's own times (one machine's wall clock).
import { readFileSync } from 'node:fs';
import { fmt, percentile } from './lib.mjs';

export function report(file, handOffs, sessions) {
  const { marks, aliases, loop } = JSON.parse(readFileSync(file, 'utf8'));
  const ours = (carrierId) => aliases[`ce:${carrierId}`];
  const end = (m) => m?.['set-done'] ?? m?.['tx-end'] ?? Infinity;
  /** Of an event delivered twice, the copy that decided (the first to finish). */
  const primary = (carrierIds) => carrierIds.map(ours).filter(Boolean).sort((a, b) => end(marks[a]) - end(marks[b]))[0];
  const chain = (sentAt, eventId, commandId, arrivedAt) => {
    const e = marks[eventId] ?? {};
    const jobId = aliases[`cmd:${commandId}`];
    const j = marks[jobId] ?? {};
    const c = marks[`cmd:${commandId}`] ?? {};
    const path = e['set-done'] ? 'set' : 'tx';
    const points = [
      ['sent', sentAt], ['ingest-start', e['ingest-start']], ['ingest-done', e['ingest-done']], ['handed', e.handed], ['turn', e.turn],
      ...(path === 'set' ? [['set-batch', e['set-batch']], ['set-query', e['set-query']], ['set-done', e['set-done']]]
        : [['set-left', e['set-left'] ?? e['fast-end']], ['tx-start', e['tx-start']], ['tx-claimed', e['tx-claimed']], ['tx-handled', e['tx-handled']], ['tx-end', e['tx-end']]]),
      ['cmd-handed', j.handed], ['cmd-turn', j.turn], ['cmd-h-start', c['h-start']], ['cmd-claim', c.claim], ['cmd-claimed', c.claimed], ['carrier', arrivedAt],
    ].filter(([, t]) => Number.isFinite(t));
    const steps = {};
    for (let i = 1; i < points.length; i++) steps[`${points[i - 1][0]} → ${points[i][0]}`] = points[i][1] - points[i - 1][1];
    return { path, total: arrivedAt - sentAt, steps, ingestSize: e['ingest-size'], setSize: e['set-size'] };
  };
  const show = (title, chains) => {
    chains = chains.filter((c) => Number.isFinite(c.total));
    const sorted = [...chains].sort((a, b) => a.total - b.total);
    const tail = sorted.slice(Math.floor(sorted.length * 0.95));
    const mid = sorted.slice(Math.floor(sorted.length * 0.4), Math.floor(sorted.length * 0.6));
    const names = [...new Set(chains.flatMap((c) => Object.keys(c.steps)))];
    console.log(`\n### ${title}: ${chains.length} (set ${chains.filter((c) => c.path === 'set').length}, tx ${chains.filter((c) => c.path === 'tx').length}); total p50 ${fmt(percentile(chains.map((c) => c.total), 50))} p99 ${fmt(percentile(chains.map((c) => c.total), 99))} ms`);
    console.log('| step | n | p50 | p99 | mean of the middle 20 % | mean of the slowest 5 % |\n|---|---|---|---|---|---|');
    for (const name of names) {
      const vals = chains.map((c) => c.steps[name]).filter((v) => v !== undefined);
      const mean = (list) => { const v = list.map((c) => c.steps[name]).filter((x) => x !== undefined); return v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN; };
      console.log(`| ${name} | ${vals.length} | ${fmt(percentile(vals, 50))} | ${fmt(percentile(vals, 99))} | ${fmt(mean(mid))} | ${fmt(mean(tail))} |`);
    }
    const sizes = (key) => chains.map((c) => c[key]).filter(Number.isFinite);
    console.log(`ingest batch size p50 ${percentile(sizes('ingestSize'), 50)} max ${Math.max(...sizes('ingestSize'))}; set batch size p50 ${percentile(sizes('setSize'), 50)} max ${Math.max(...sizes('setSize'), 0)}`);
  };
  show('hand-offs', handOffs.map((h) => chain(h.sentAt, primary(h.eventIds), h.dialCommandId, h.dialAt)));
  show('answer → bridge', sessions.filter((s) => s.answerIds && s.bridgeCommandId).map((s) => chain(s.answerWallAt, primary(s.answerIds), s.bridgeCommandId, s.bridgeWallAt)));
  console.log(`\nevent loop delay (resolution 5 ms) p50 ${fmt(loop.p50)} p99 ${fmt(loop.p99)} max ${fmt(loop.max)} mean ${fmt(loop.mean)} ms`);
}

export function samplesReport(file) {
  const { samples } = JSON.parse(readFileSync(file, 'utf8'));
  console.log('\n| sample | n | p50 | p99 | max |\n|---|---|---|---|---|');
  for (const [name, v] of Object.entries(samples ?? {}).sort()) console.log(`| ${name} | ${v.length} | ${fmt(percentile(v, 50))} | ${fmt(percentile(v, 99))} | ${fmt(Math.max(...v))} |`);
}
