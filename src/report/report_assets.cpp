// The stylesheet and the renderer every dlakit HTML report embeds (see html_page.h for the data it reads).
// Plain ES5-level JavaScript, no libraries, nothing fetched; it logs nothing (tests fail on any console
// message).
namespace dlakit::report {

extern const char* const kReportCss = R"CSS(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2327;background:#fafafa}
header{padding:16px 24px 8px;background:#fff;border-bottom:1px solid #e2e4e7}
h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:4px 0}h3{font-size:13px;margin:14px 0 4px;color:#50575e}
.verdict{display:inline-block;margin:0 8px 6px 0;padding:3px 10px;border-radius:12px;font-weight:600;font-size:13px}
.verdict.good{background:#d8f3e3;color:#135e36}.verdict.bad{background:#fde8e4;color:#8a2a17}
.recommendation{display:inline;font-size:14px;overflow-wrap:anywhere}
dl.facts{display:flex;flex-wrap:wrap;gap:4px 18px;margin:10px 0 4px;font-size:13px}
dl.facts div{display:flex;gap:6px}dt{color:#646970}dd{margin:0;font-weight:600}
main{display:flex;align-items:flex-start}#left{flex:1;min-width:0;padding:10px 24px}
aside{width:380px;flex:none;position:sticky;top:0;max-height:100vh;overflow:auto;box-sizing:border-box;
 padding:14px 16px;background:#fff;border-left:1px solid #e2e4e7;font-size:13px}
#controls{display:flex;flex-wrap:wrap;align-items:center;gap:10px;font-size:13px;margin-bottom:8px}
.legend{display:flex;flex-wrap:wrap;gap:8px;align-items:center}.chip{display:inline-flex;align-items:center;gap:4px}
.swatch{display:inline-block;width:14px;height:14px;border-radius:3px;border:1px solid rgba(0,0,0,.2)}
.ramp{display:inline-block;width:160px;height:12px;border-radius:3px;
 background:linear-gradient(90deg,rgb(44,123,182),rgb(255,255,191),rgb(215,25,28))}
.run{display:inline-block;vertical-align:top;margin:4px 2px;padding:3px 4px 4px;border:2px solid;border-radius:6px;
 background:#fff;max-width:100%;box-sizing:border-box}
.runlabel{font-size:11px;color:#50575e;margin:0 2px 2px}.boxes{display:flex;flex-wrap:wrap}
.hop{display:inline-block;vertical-align:top;margin:22px 2px 0;padding:2px 6px;font-size:11px;font-weight:600;
 color:#8a2a17;background:#fde8e4;border-radius:10px}
button.layer{position:relative;min-width:34px;height:24px;margin:1px;padding:0 3px;font:10px/22px ui-monospace,monospace;
 border:1px solid rgba(0,0,0,.25);border-radius:3px;cursor:pointer;overflow:hidden;white-space:nowrap}
button.layer.reasons::after{content:"";position:absolute;top:0;right:0;border:5px solid #c0392b;
 border-left-color:transparent;border-bottom-color:transparent}
button.layer.rewritten{border-style:dashed;border-color:#1d2327}
button.layer.flagged{outline:2px solid #c0392b;outline-offset:-2px}
button.layer.selected{outline:3px solid #1d2327;outline-offset:1px;z-index:1}
ul{padding-left:18px;margin:4px 0}li{margin:3px 0}.fix{color:#135e36}.declined{color:#646970}
table{border-collapse:collapse;font-size:12px;margin:6px 0 14px}td,th{border:1px solid #dcdcde;padding:2px 6px;
 text-align:left;vertical-align:top}th{background:#f0f0f1;overflow-wrap:normal;white-space:nowrap}td.num{text-align:right}tr.flag{background:#fde2e0}
tr.click{cursor:pointer}tr.click:hover{background:#f0f6fc}.sub{color:#646970;margin:0 0 6px}
#tables,#extra{font-size:13px;overflow-wrap:anywhere}#details{overflow-wrap:anywhere}
#details table{width:100%}#details td:first-child{color:#646970;width:40%}
)CSS";

extern const char* const kReportJs = R"JS(
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var L = D.layers || [];
  var nameKey = D.name_key || 'name';
  var KNOWN = {DLA: '#2e8b57', GPU: '#e67e22', fp16: '#3498db', int8: '#8e44ad', fp32: '#a0a5aa'};
  var MORE = ['#1abc9c', '#c0392b', '#f1c40f', '#34495e', '#9b59b6', '#16a085', '#d35400', '#2980b9',
              '#7f8c8d', '#27ae60', '#e84393', '#6c5ce7'];
  var boxes = [], selected = -1;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function fmt(v) {
    if (typeof v !== 'number') return v === null || v === undefined ? '-' : String(v);
    if (Number.isInteger(v)) return Math.abs(v) >= 1e6 ? v.toExponential(3) : String(v);
    return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : v.toPrecision(4);
  }

  // Header: title, verdict, recommendation, facts.
  var top = document.getElementById('top');
  top.appendChild(el('h1', null, D.title));
  if (D.verdict) top.appendChild(el('span', {'class': 'verdict ' + (D.verdict.good ? 'good' : 'bad')}, D.verdict.text));
  if (D.recommendation) top.appendChild(el('p', {'class': 'recommendation'}, D.recommendation));
  var facts = el('dl', {'class': 'facts'});
  (D.facts || []).forEach(function (f) {
    var d = el('div');
    d.appendChild(el('dt', null, f[0]));
    d.appendChild(el('dd', null, fmt(f[1])));
    facts.appendChild(d);
  });
  top.appendChild(facts);

  // What the layers can be coloured by: the named categorical fields, and every field that is a finite
  // number wherever it is present (and present somewhere).
  var skip = (D.numeric_skip || []).concat([nameKey]);
  var keys = [];
  L.forEach(function (l) { Object.keys(l).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
  var numeric = keys.filter(function (k) {
    if (skip.indexOf(k) >= 0) return false;
    var any = false;
    var ok = L.every(function (l) {
      var v = l[k];
      if (typeof v === 'number') { any = true; return isFinite(v); }
      return v === null || v === undefined;
    });
    return ok && any;
  });
  var categorical = (D.categorical || []).filter(function (k) { return keys.indexOf(k) >= 0; });

  function ramp(t) {
    var s = [[44, 123, 182], [255, 255, 191], [215, 25, 28]];
    var i = t < 0.5 ? 0 : 1, u = t < 0.5 ? t * 2 : (t - 0.5) * 2, a = s[i], b = s[i + 1];
    return 'rgb(' + [0, 1, 2].map(function (c) { return Math.round(a[c] + (b[c] - a[c]) * u); }).join(',') + ')';
  }
  function colouring(field) {
    if (numeric.indexOf(field) >= 0) {
      var vals = L.map(function (l) { return l[field]; }).filter(function (v) { return typeof v === 'number'; });
      var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
      var log = lo > 0 && hi / lo > 100;
      var t = function (v) {
        if (hi === lo) return 0.5;
        return log ? (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo)) : (v - lo) / (hi - lo);
      };
      return {numeric: true, lo: lo, hi: hi, log: log,
              of: function (l) { return typeof l[field] === 'number' ? ramp(t(l[field])) : '#eeeeee'; }};
    }
    var seen = {}, n = 0;
    var of = function (l) {
      var v = l[field];
      if (v === null || v === undefined || v === '') return '#eeeeee';
      v = String(v);
      if (KNOWN[v]) return KNOWN[v];
      if (!(v in seen)) seen[v] = MORE[n++ % MORE.length];
      return seen[v];
    };
    L.forEach(of);
    return {numeric: false, of: of, values: function () {
      var r = [];
      L.forEach(function (l) { var v = l[field]; if (v !== null && v !== undefined && v !== '' && r.indexOf(String(v)) < 0) r.push(String(v)); });
      return r;
    }};
  }
  function ink(rgb) {  // black or white text, whichever reads on this fill
    var m = /rgb\((\d+),(\d+),(\d+)\)/.exec(rgb), r, g, b;
    if (m) { r = +m[1]; g = +m[2]; b = +m[3]; } else { r = parseInt(rgb.substr(1, 2), 16); g = parseInt(rgb.substr(3, 2), 16); b = parseInt(rgb.substr(5, 2), 16); }
    return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? '#1d2327' : '#ffffff';
  }

  function tooltip(l) {
    var t = l[nameKey] + '\n' + (l.op || '') + (l.fused_activation ? '+' + l.fused_activation : '');
    if (l.device) t += '  ' + l.device + (l.precision ? ' ' + l.precision : '');
    if (l.mode) t += '  ' + l.mode;
    (l.reasons || []).forEach(function (r) { t += '\n' + r.code + ': ' + r.field + ' = ' + r.actual + ' (limit ' + r.limit + ')'; });
    if (l.flagged) t += '\nflagged: its own error stands out';
    return t + '\n(click for details)';
  }
  function remarksOf(l) {
    return (D.remarks || []).filter(function (r) { return r.node === l[nameKey]; });
  }

  // The network: layers in graph order, in runs of one segment; a marker where the device changes.
  var net = document.getElementById('network');
  var runs = [];
  L.forEach(function (l, i) {
    var g = D.group_key ? l[D.group_key] : null;
    if (!runs.length || runs[runs.length - 1].group !== g)
      runs.push({group: g, device: D.device_key ? l[D.device_key] : null, layers: []});
    runs[runs.length - 1].layers.push(i);
  });
  runs.forEach(function (r, k) {
    if (k > 0 && D.device_key && runs[k - 1].device !== r.device)
      net.appendChild(el('span', {'class': 'hop', title: 'a transition between the DLA and the GPU: a DRAM round trip and a reformat'},
                         '\u21c4 ' + runs[k - 1].device + ' \u2192 ' + r.device));
    var run = el('div', {'class': 'run', style: 'border-color:' + (KNOWN[r.device] || '#a0a5aa')});
    var label = (r.group !== null && r.group !== undefined ? 'segment ' + r.group + ' \u00b7 ' : '') +
                (r.device ? r.device + ' \u00b7 ' : '') + r.layers.length + (r.layers.length === 1 ? ' layer' : ' layers');
    run.appendChild(el('div', {'class': 'runlabel'}, label));
    var row = el('div', {'class': 'boxes'});
    r.layers.forEach(function (i) {
      var l = L[i], cls = 'layer';
      if (l.reasons && l.reasons.length) cls += ' reasons';
      if (l.fused_activation || remarksOf(l).some(function (m) { return m.applied; })) cls += ' rewritten';
      if (l.flagged) cls += ' flagged';
      var b = el('button', {'class': cls, type: 'button', title: tooltip(l)}, (l.op || '?').substr(0, 5));
      b.addEventListener('click', function () { select(i, true); });
      boxes[i] = b;
      row.appendChild(b);
    });
    run.appendChild(row);
    net.appendChild(run);
  });

  // Colour-by control and legend.
  var controls = document.getElementById('controls');
  controls.appendChild(el('label', {'for': 'colour-by'}, 'colour by'));
  var pick = el('select', {id: 'colour-by'});
  categorical.concat(numeric).forEach(function (k) { pick.appendChild(el('option', {value: k}, k)); });
  controls.appendChild(pick);
  var legend = el('span', {'class': 'legend'});
  controls.appendChild(legend);
  var marks = [];  // what the box markings mean, where some box has them
  if (boxes.some(function (b) { return b.classList.contains('reasons'); })) marks.push('\u25e5 reasons');
  if (boxes.some(function (b) { return b.classList.contains('rewritten'); })) marks.push('\u2504 rewritten by a pass');
  if (boxes.some(function (b) { return b.classList.contains('flagged'); })) marks.push('\u25a2 flagged');
  controls.appendChild(el('span', {'class': 'chip'}, marks.join('   ')));
  function recolour(field) {
    var c = colouring(field);
    boxes.forEach(function (b, i) { var f = c.of(L[i]); b.style.background = f; b.style.color = ink(f); });
    legend.textContent = '';
    if (c.numeric) {
      legend.appendChild(el('span', null, fmt(c.lo)));
      legend.appendChild(el('span', {'class': 'ramp'}));
      legend.appendChild(el('span', null, fmt(c.hi) + (c.log ? ' (log scale)' : '')));
    } else {
      c.values().forEach(function (v) {
        var chip = el('span', {'class': 'chip'});
        var sw = el('span', {'class': 'swatch'});
        var probe = {}; probe[field] = v;
        sw.style.background = c.of(probe);
        chip.appendChild(sw);
        chip.appendChild(el('span', null, v));
        legend.appendChild(chip);
      });
    }
  }
  pick.addEventListener('change', function () { recolour(pick.value); });
  if (D.colour_default && (categorical.concat(numeric)).indexOf(D.colour_default) >= 0) pick.value = D.colour_default;
  if (pick.value) recolour(pick.value);

  // Details of one layer.
  function select(i, remember) {
    if (selected >= 0) boxes[selected].classList.remove('selected');
    selected = i;
    boxes[i].classList.add('selected');
    var l = L[i], d = document.getElementById('details');
    d.textContent = '';
    d.appendChild(el('h2', null, l[nameKey]));
    d.appendChild(el('p', {'class': 'sub'}, 'layer #' + i + ' \u00b7 ' + (l.op || '') + (l.fused_activation ? ' + fused ' + l.fused_activation : '')));
    if (l.reasons && l.reasons.length) {
      d.appendChild(el('h3', null, 'Why it cannot run on the DLA'));
      var ul = el('ul');
      l.reasons.forEach(function (r) {
        var li = el('li');
        li.appendChild(el('b', null, r.code));
        li.appendChild(document.createTextNode(': ' + r.field + ' = ' + r.actual + ' (limit ' + r.limit + ')'));
        li.appendChild(el('div', {'class': 'fix'}, 'fix: ' + r.fix));
        ul.appendChild(li);
      });
      d.appendChild(ul);
    }
    if (l.notes && l.notes.length) {
      d.appendChild(el('h3', null, 'Notes'));
      var nl = el('ul');
      l.notes.forEach(function (n) { nl.appendChild(el('li', null, n)); });
      d.appendChild(nl);
    }
    var rm = remarksOf(l);
    if (rm.length) {
      d.appendChild(el('h3', null, 'Graph passes'));
      var rl = el('ul');
      rm.forEach(function (r) { rl.appendChild(el('li', {'class': r.applied ? '' : 'declined'}, r.pass + (r.applied ? ': ' : ' declined: ') + r.message)); });
      d.appendChild(rl);
    }
    d.appendChild(el('h3', null, 'Fields'));
    var t = el('table');
    Object.keys(l).forEach(function (k) {
      var v = l[k];
      if (k === nameKey || (v !== null && typeof v === 'object')) return;
      var tr = el('tr');
      tr.appendChild(el('td', null, k));
      tr.appendChild(el('td', {'class': typeof v === 'number' ? 'num' : ''}, fmt(v)));
      t.appendChild(tr);
    });
    d.appendChild(t);
    if (remember) location.hash = 'layer=' + encodeURIComponent(l[nameKey]);
  }

  // Tables: the segments (a row selects the segment's first layer) and what the passes did.
  var tables = document.getElementById('tables');
  if (D.groups && D.groups.length) {
    tables.appendChild(el('h2', null, 'Segments'));
    var st = el('table'), hr = el('tr');
    ['segment', 'device', 'layers', 'first .. last', 'GMACs', 'ends because'].forEach(function (h) { hr.appendChild(el('th', null, h)); });
    st.appendChild(hr);
    D.groups.forEach(function (s) {
      var names = s.layers || [], tr = el('tr', {'class': 'click'});
      [s.id, s.device, names.length, names.length ? names[0] + ' .. ' + names[names.length - 1] : '',
       ((s.macs || 0) / 1e9).toFixed(3), s.ends_because || ''].forEach(function (v, c) {
        tr.appendChild(el('td', {'class': c === 2 || c === 4 ? 'num' : ''}, String(v)));
      });
      tr.addEventListener('click', function () {
        for (var i = 0; i < L.length; ++i) if (L[i][nameKey] === names[0]) { select(i, true); boxes[i].scrollIntoView({block: 'center'}); return; }
      });
      st.appendChild(tr);
    });
    tables.appendChild(st);
  }
  if (D.remarks && D.remarks.length) {
    var applied = D.remarks.filter(function (r) { return r.applied; });
    var declined = D.remarks.filter(function (r) { return !r.applied; });
    tables.appendChild(el('h2', null, 'Rewrites: ' + applied.length + ' applied, ' + declined.length + ' declined'));
    [[applied, false], [declined, true]].forEach(function (pair) {
      if (!pair[0].length) return;
      var holder = pair[1] ? el('details') : tables;
      if (pair[1]) holder.appendChild(el('summary', null, 'declined (' + pair[0].length + ')'));
      var ul = el('ul');
      pair[0].forEach(function (r) { ul.appendChild(el('li', {'class': pair[1] ? 'declined' : ''}, r.pass + (r.node ? ' [' + r.node + ']' : '') + ': ' + r.message)); });
      holder.appendChild(ul);
      if (pair[1]) tables.appendChild(holder);
    });
  }

  // Start on the layer the URL names (#layer=NAME), else the first with reasons, else the first flagged.
  var want = /^#layer=(.*)$/.exec(location.hash), start = -1;
  for (var i = 0; i < L.length && want; ++i) if (L[i][nameKey] === decodeURIComponent(want[1])) start = i;
  for (i = 0; i < L.length && start < 0; ++i) if (L[i].reasons && L[i].reasons.length) start = i;
  for (i = 0; i < L.length && start < 0; ++i) if (L[i].flagged) start = i;
  if (start < 0 && L.length) start = 0;
  if (start >= 0) select(start, false);
  window.addEventListener('hashchange', function () {
    var m = /^#layer=(.*)$/.exec(location.hash);
    for (var j = 0; m && j < L.length; ++j) if (L[j][nameKey] === decodeURIComponent(m[1]) && j !== selected) select(j, false);
  });
  document.body.setAttribute('data-rendered', String(L.length));
})();
)JS";

}  // namespace dlakit::report
