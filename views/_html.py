"""The page `optimize report RUN --html FILE` writes: one file, inline CSS and SVG, nothing fetched."""

REPORT_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Atoll · {{ report.id }}</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1d2330; }
  h1 { font-size: 1.5rem; margin-bottom: .2rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
  .muted { color: #667085; } .spark { font-family: ui-monospace, monospace; letter-spacing: 1px; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1.2rem; }
  dt { font-weight: 600; } dd { margin: 0; }
  table { border-collapse: collapse; width: 100%; font-size: .9rem; }
  th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid #e4e7ec; vertical-align: top; }
  td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
  .accept { color: #067647; font-weight: 600; } .reject { color: #b42318; } .void { color: #9e3fb3; }
  .other { color: #667085; } .reasons { color: #b42318; font-size: .85rem; margin: .2rem 0 0; padding-left: 1rem; }
  svg { background: #f9fafb; border: 1px solid #e4e7ec; border-radius: 6px; }
  pre.diff { background: #fff; border: 1px solid #e4e7ec; border-radius: 6px; padding: 1rem; overflow-x: auto;
             font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; }
</style>
</head>
<body>
<h1>Optimization {{ report.id }}</h1>
<p class="muted">{{ report.harness }} ({{ report.harness_path }}) · model {{ report.model }} ·
  {{ report.status }}{% if report.stop_reason %} ({{ report.stop_reason }}){% endif %}</p>
<dl>
  <dt>started</dt><dd>{{ report.started_at }}{% if report.finished_at %} → {{ report.finished_at }}{% endif %}</dd>
  <dt>decisions</dt><dd>{{ report.accepted }} accepted of {{ report.proposals | length }} proposals</dd>
  {% if report.test_start is not none %}<dt>test split</dt>
  <dd>{{ "%.3f" | format(report.test_start) }} → {{ "%.3f" | format(report.test_final or 0) }} (reported, never used to decide)</dd>{% endif %}
  <dt>spend</dt><dd>{{ report.episodes }} episodes · {{ report.usage.model_calls }} model calls ·
    {{ "{:,}".format(report.usage.total_tokens) }} tokens · ${{ "%.4f" | format(report.usage.cost_usd) }}</dd>
  <dt>harness</dt><dd><code>{{ report.start_hash[:12] }}</code> → <code>{{ report.final_hash[:12] }}</code></dd>
</dl>

<h2>Gate score per accepted step <span class="spark">{{ sparkline }}</span></h2>
{% if points %}
<svg width="640" height="180" viewBox="0 0 640 180" role="img" aria-label="gate score per accepted step">
  <line x1="28" y1="152" x2="612" y2="152" stroke="#d0d5dd"/><line x1="28" y1="28" x2="612" y2="28" stroke="#eaecf0"/>
  <text x="4" y="156" font-size="10" fill="#667085">0</text><text x="4" y="32" font-size="10" fill="#667085">1</text>
  <polyline fill="none" stroke="#12b76a" stroke-width="2" points="{% for p in points %}{{ p.x }},{{ p.y }} {% endfor %}"/>
  {% for p in points %}<circle cx="{{ p.x }}" cy="{{ p.y }}" r="4" fill="#067647"><title>{{ p.label }}: {{ p.score }}</title></circle>
  <text x="{{ p.x }}" y="{{ p.y - 8 }}" font-size="10" text-anchor="middle">{{ p.score }}</text>{% endfor %}
</svg>
<p class="muted">{% for p in points %}{{ p.label }}{% if not loop.last %} → {% endif %}{% endfor %}</p>
{% else %}<p class="muted">No gate score yet.</p>{% endif %}

<h2>Proposals</h2>
<table>
  <tr><th>#</th><th>operator</th><th>verdict</th><th>score</th><th>lower bound</th><th>p</th><th>tasks</th><th>commit</th><th>rationale</th></tr>
  {% for row in report.proposals %}
  <tr>
    <td class="num">{{ row.iteration + 1 }}</td><td>{{ row.operator }}</td>
    <td class="{{ row.verdict if row.verdict in styles else 'other' }}">{{ row.verdict }}</td>
    <td class="num">{% if row.p_value is not none %}{{ "%.3f" | format(row.incumbent_score) }} → {{ "%.3f" | format(row.candidate_score) }}{% endif %}</td>
    <td class="num">{% if row.lower_bound is not none %}{{ "%+.3f" | format(row.lower_bound) }}{% endif %}</td>
    <td class="num">{% if row.p_value is not none %}{{ "%.3g" | format(row.p_value) }}{% endif %}</td>
    <td>{{ row.record }}</td><td><code>{{ (row.commit or "")[:10] }}</code></td>
    <td>{{ row.rationale }}{% if row.reasons %}<ul class="reasons">{% for reason in row.reasons %}<li>{{ reason }}</li>{% endfor %}</ul>{% endif %}</td>
  </tr>
  {% endfor %}
</table>

{% if report.frontier and report.objective != "quality" %}
<h2>Quality / {{ report.objective }} frontier</h2>
<pre class="diff">{{ frontier_html }}</pre>
{% endif %}
<h2>Final harness against the start</h2>
<pre class="diff">{{ diff_html }}</pre>
</body>
</html>
"""
