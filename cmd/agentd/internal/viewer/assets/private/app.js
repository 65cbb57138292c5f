'use strict';
// The records viewer. Pages by location hash: #/ the list (its filters in the hash's
// query), #/r/<request id> one request, #/config the live config. Every value from the
// daemon goes into the page as text: elements are built with el() and svg(), whose
// children become text nodes; nothing is ever parsed as markup.
(() => {
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const LOGIN = '/ui/public/login.html';
  const main = document.getElementById('main');
  let settings = {};

  // ---- Building elements.

  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (/^on/i.test(k)) throw new Error('event attributes are not set from data');
      e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  function fill(e, children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    return fill(e, children);
  }
  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    setAttrs(e, attrs);
    return fill(e, children);
  }
  // link returns an anchor to a viewer page (a hash route).
  function link(hash, ...children) { return el('a', {href: hash}, ...children); }
  function requestLink(id) { return link('#/r/' + encodeURIComponent(id), id); }
  function badge(value) { return value ? el('span', {class: 'badge ' + value}, value) : el('span', {class: 'muted'}, '—'); }
  // labelChips shows information-flow labels as chips, each with its name as text and
  // in data-label; kind says whose they are (result, request, call).
  function labelChips(labels, kind) {
    return (labels || []).length ? el('span', {class: 'labels ' + kind, 'data-labels': kind},
      labels.map(l => el('span', {class: 'label-chip', 'data-label': l}, l))) : null;
  }
  function json(v) { return el('pre', {class: 'json'}, JSON.stringify(v, null, 2)); }
  function facts(pairs) {
    return el('dl', {class: 'facts'}, pairs.filter(p => p && p[1] !== undefined && p[1] !== null && p[1] !== '')
      .map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  }
  function show(...nodes) { main.replaceChildren(); fill(main, nodes); }
  // extras are the fields of obj a page does not show by name, as facts, so that a
  // field the daemon adds shows up without a change here.
  function extras(obj, shown) {
    return Object.entries(obj).filter(([k, v]) => !shown.includes(k) && v !== null && typeof v !== 'object')
      .map(([k, v]) => [k.replace(/_/g, ' '), String(v)]);
  }

  // ---- Formatting.

  function duration(ns) {
    if (ns === undefined || ns === null) return '';
    if (ns >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
    if (ns >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
    if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' µs';
    return ns + ' ns';
  }
  function time(t) {
    if (!t || t.startsWith('0001-')) return '';
    const d = new Date(t);
    return isNaN(d) ? t : d.toLocaleString(undefined, {hour12: false}) + '.' + String(d.getMilliseconds()).padStart(3, '0');
  }
  function decisionText(d) {
    return d ? [d.failure_policy, d.action, d.reason].join(' / ') : null;
  }

  // ---- The API.

  async function api(path) {
    const resp = await fetch(path, {credentials: 'same-origin', headers: {Accept: 'application/json'}});
    if (resp.status === 401) {
      location.assign(LOGIN + '?next=' + encodeURIComponent(location.pathname + location.hash));
      throw new Error('a login is needed');
    }
    const body = await resp.json().catch(() => null);
    if (!resp.ok) {
      const e = body && body.error;
      throw new Error(e ? e.type + ': ' + e.message : 'HTTP ' + resp.status);
    }
    return body;
  }

  // post sends a JSON body with the session's CSRF token (settings.csrf, which only a
  // page of this origin can read) in X-Agentd-CSRF: the viewer's one kind of write,
  // deciding an approval.
  async function post(path, body) {
    const resp = await fetch(path, {method: 'POST', credentials: 'same-origin',
      headers: {Accept: 'application/json', 'Content-Type': 'application/json', 'X-Agentd-CSRF': settings.csrf || ''},
      body: JSON.stringify(body)});
    const answer = await resp.json().catch(() => null);
    if (!resp.ok) {
      const e = answer && answer.error;
      throw new Error(e ? e.type + ': ' + e.message : 'HTTP ' + resp.status);
    }
    return answer;
  }

  // traceLink is the invocation's link built from the --trace-url template, or null
  // when there is no template or the invocation lacks a value the template uses.
  function traceLink(inv, requestID) {
    const tmpl = settings.trace_url;
    if (!tmpl) return null;
    const values = {
      trace_id: inv.trace_id, span_id: inv.span_id, hook: inv.hook_name, stage: inv.phase,
      span_name: 'pipeline.hook.' + inv.phase + '.' + inv.hook_name, request_id: requestID,
    };
    let missing = false;
    const href = tmpl.replace(/\{([a-z_]+)\}/g, (m, name) => {
      if (!values[name]) { missing = true; return ''; }
      return encodeURIComponent(values[name]);
    });
    let url;
    try { url = new URL(href); } catch (e) { return null; }
    if (missing || (url.protocol !== 'http:' && url.protocol !== 'https:')) return null;
    return el('a', {href: url.href, class: 'trace', target: '_blank', rel: 'noopener noreferrer'}, 'trace');
  }

  // ---- The list.

  const FILTERS = [
    {name: 'status', label: 'Status', options: ['running', 'succeeded', 'failed']},
    {name: 'lifecycle', label: 'Lifecycle', options: ['open', 'completed', 'failed', 'abandoned']},
    {name: 'stage', label: 'Stage', options: ['before_planning', 'after_planning', 'after_execution', 'after_synthesis']},
    {name: 'guard', label: 'Guard outcome', options: ['allow', 'deny', 'guard_error']},
    {name: 'hook', label: 'Hook'},
    {name: 'reason', label: 'Decision reason'},
    {name: 'violation', label: 'Violation code'},
    {name: 'generation', label: 'Generation'},
    {name: 'tenant', label: 'Tenant'},
    {name: 'id', label: 'Request id contains'},
    {name: 'since', label: 'Updated since', type: 'datetime-local'},
    {name: 'until', label: 'Updated before', type: 'datetime-local'},
  ];

  function localInput(rfc3339) {
    if (!rfc3339) return '';
    const d = new Date(rfc3339);
    if (isNaN(d)) return '';
    return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
  }

  function filterForm(params) {
    const fields = FILTERS.map(f => {
      let input;
      if (f.options) {
        input = el('select', {name: f.name, id: 'filter-' + f.name},
          el('option', {value: ''}, 'any'), f.options.map(o => el('option', {value: o, selected: params.get(f.name) === o}, o)));
      } else {
        const v = f.type === 'datetime-local' ? localInput(params.get(f.name)) : (params.get(f.name) || '');
        input = el('input', {name: f.name, id: 'filter-' + f.name, type: f.type || 'text', value: v, step: f.type ? 1 : undefined});
      }
      return el('label', {}, f.label, input);
    });
    const form = el('form', {class: 'filters', id: 'filters'}, fields, el('button', {type: 'submit'}, 'Filter'),
      el('button', {type: 'button', id: 'filter-clear'}, 'Clear'));
    form.addEventListener('submit', ev => {
      ev.preventDefault();
      const q = new URLSearchParams();
      for (const f of FILTERS) {
        let v = form.elements[f.name].value.trim();
        if (v && f.type === 'datetime-local') v = new Date(v).toISOString();
        if (v) q.set(f.name, v);
      }
      location.hash = '#/' + (q.toString() ? '?' + q : '');
    });
    form.querySelector('#filter-clear').addEventListener('click', () => { location.hash = '#/'; });
    return form;
  }

  async function listPage(params) {
    document.title = 'agentd records';
    const form = filterForm(params);
    show(el('h1', {}, 'Requests'), form, el('p', {class: 'muted'}, 'Loading…'));
    let page;
    try {
      page = await api('/v1/executions?' + params);
    } catch (e) {
      show(el('h1', {}, 'Requests'), form, el('p', {class: 'error', id: 'list-error'}, e.message));
      return;
    }
    const rows = page.records.map(r => el('tr', {'data-request-id': r.request_id},
      el('td', {}, requestLink(r.request_id), r.request ? el('div', {class: 'request-text'}, r.request) : null),
      el('td', {}, badge(r.status)),
      el('td', {}, badge(r.lifecycle)),
      el('td', {class: 'tenant'}, r.tenant || ''),
      el('td', {}, r.cause || ''),
      el('td', {}, r.hooks.join(', ')),
      el('td', {}, r.violations.map(v => el('code', {}, v, ' '))),
      el('td', {}, r.guard_outcomes.map(g => [badge(g), ' '])),
      el('td', {class: 'mono'}, r.generation || ''),
      el('td', {}, time(r.updated_at))));
    const table = el('table', {id: 'records'},
      el('thead', {}, el('tr', {}, ['Request', 'Status', 'Lifecycle', 'Tenant', 'Cause', 'Hooks', 'Violations', 'Guards', 'Generation', 'Updated']
        .map(h => el('th', {}, h)))),
      el('tbody', {}, rows));
    const pager = el('div', {class: 'pager'});
    if (params.has('cursor')) {
      const first = new URLSearchParams(params);
      first.delete('cursor');
      pager.append(link('#/' + (first.toString() ? '?' + first : ''), '« Newest'));
    }
    if (page.next_cursor) {
      const next = new URLSearchParams(params);
      next.set('cursor', page.next_cursor);
      pager.append(el('a', {href: '#/?' + next, id: 'next-page'}, 'Older »'));
    }
    const empty = page.records.length ? null : el('p', {class: 'muted', id: 'no-records'}, 'No record matches.');
    show(el('h1', {}, 'Requests'), form, table, empty, pager);
  }

  // ---- One request.

  function invocationCard(inv, rec) {
    const violations = (rec.rejections || []).filter(r => r.hook === inv.hook_name && r.phase === inv.plan_phase)
      .flatMap(r => r.violations || []);
    const decision = decisionText(inv.decision);
    return el('article', {class: 'card invocation ' + inv.status, 'data-hook': inv.hook_name, 'data-stage': inv.phase},
      el('header', {},
        el('h4', {}, inv.hook_name), badge(inv.status), el('span', {class: 'muted'}, '#' + inv.sequence),
        el('span', {class: 'muted'}, duration(inv.duration)), traceLink(inv, rec.request_id)),
      facts([
        ['Decision', decision ? el('span', {class: 'decision'}, decision) : el('span', {class: 'decision not-recorded'}, 'not recorded')],
        ['Cause', inv.decision && inv.decision.cause],
        ['Started', time(inv.started_at)],
        ['Error', inv.error ? el('pre', {class: 'error-text'}, inv.error) : null],
        ...extras(inv, ['hook_name', 'phase', 'status', 'sequence', 'plan_phase', 'started_at', 'duration', 'error', 'trace_id', 'span_id']),
      ]),
      violations.length ? [el('h4', {}, 'Violations'), violationList(violations)] : null,
      findingLists(inv.would_deny),
      (inv.effects || []).length ? [el('h4', {}, 'Effects'), effectList(inv.effects)] : null);
  }

  function violationList(vs) {
    return el('ul', {class: 'violations'}, vs.map(v => el('li', {class: 'violation', 'data-code': v.code},
      el('code', {}, v.code), v.step_id ? [' at ', el('code', {}, v.step_id)] : null, ': ', v.message)));
  }

  // findingLists shows what rules in warn mode (warnings, returned to the caller) and
  // in audit mode (recorded only) would have denied, each list under its heading.
  function findingLists(findings) {
    return [['warn', 'Warnings'], ['audit', 'Would deny (audit)']].map(([mode, title]) => {
      const fs = (findings || []).filter(f => f.mode === mode);
      return fs.length ? [el('h4', {class: 'findings-title'}, title), findingList(fs)] : null;
    });
  }

  function findingList(fs) {
    return el('ul', {class: 'findings'}, fs.map(f => el('li', {class: 'finding ' + f.mode, 'data-mode': f.mode, 'data-code': f.code || ''},
      badge(f.mode), ' ', el('strong', {}, f.rule), f.code ? [' ', el('code', {}, f.code)] : null,
      f.cause ? el('span', {class: 'muted'}, ' (' + f.cause + ')') : null, f.reason ? [': ', f.reason] : null,
      (f.violations || []).length ? violationList(f.violations) : null)));
  }

  function effectList(effects) {
    return el('ul', {class: 'effects'}, effects.map(e => el('li', {class: 'effect', 'data-effect': e.effect_id},
      el('div', {}, el('strong', {}, e.name || e.effect_id), ' ', badge(e.status), ' ',
        el('span', {class: 'muted mono'}, e.effect_id)),
      e.summary ? el('div', {}, e.summary) : null,
      el('div', {class: 'muted'}, 'started ' + time(e.started_at) + (e.duration ? ', ' + duration(e.duration) : '')),
      (e.history || []).length ? el('ol', {class: 'history'}, e.history.map(h =>
        el('li', {}, badge(h.status), ' until ' + time(h.replaced_at))), el('li', {}, badge(e.status), ' now')) : null,
      e.error ? el('pre', {class: 'error-text'}, e.error) : null,
      e.data !== undefined ? json(e.data) : null)));
  }

  function rejectionCard(r) {
    return el('article', {class: 'card rejection', 'data-phase': r.phase},
      el('header', {}, el('h4', {}, 'Rejected candidate ' + (r.plan && r.plan.plan_id ? r.plan.plan_id : '')), badge('rejected')),
      facts([
        ['Cause', r.cause], ['Hook', r.hook], ['Reason', r.reason],
        ['Plan rule', r.rule ? r.rule + (r.code ? ' (' + r.code + ')' : '') : null], ['Step', r.step_id],
        ['At', time(r.at)], ['Error', r.error ? el('pre', {class: 'error-text'}, r.error) : null],
      ]),
      (r.violations || []).length ? [el('h4', {}, 'Violations'), violationList(r.violations)] : null);
  }

  let graphSeq = 0;

  // drawGraph draws a plan graph laid out by the daemon (GET /ui/graphs/{id}).
  function drawGraph(g) {
    const id = 'arrow-' + (++graphSeq);
    const W = g.node_width, H = g.node_height;
    const s = svg('svg', {class: 'plan-graph' + (g.rejected ? ' rejected' : ''), width: g.width, height: g.height,
      viewBox: '0 0 ' + g.width + ' ' + g.height, role: 'img', 'data-phase': g.phase, 'data-rejected': String(g.rejected),
      'aria-label': (g.rejected ? 'rejected candidate' : 'accepted plan') + ' of phase ' + g.phase},
    svg('defs', {}, svg('marker', {id, viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse'},
      svg('path', {d: 'M 0 0 L 10 5 L 0 10 z'}))));
    for (const e of g.edges) {
      const refs = e.refs || [];
      const kinds = (e.depends_on ? ' depends-on' : '') + (refs.length ? ' reference' : '');
      const what = [e.depends_on ? e.to + ' depends on ' + e.from : null,
        refs.length ? e.to + ' references ' + refs.map(p => e.from + '.' + p).join(', ') : null].filter(Boolean).join('; ');
      s.append(svg('g', {class: 'edge' + kinds, 'data-from': e.from, 'data-to': e.to},
        svg('title', {}, what),
        svg('path', {d: e.path, 'marker-end': 'url(#' + id + ')'}),
        refs.length ? svg('text', {x: e.label_x, y: e.label_y, 'text-anchor': 'middle'}, refs.join(', ')) : null));
    }
    for (const n of g.nodes) {
      const denials = n.denials || [];
      const cls = 'node' + (n.external ? ' external' : '') + ((n.violations || []).length ? ' violated' : '') + (denials.length ? ' denied' : '');
      s.append(svg('g', {class: cls, 'data-step': n.step_id, transform: `translate(${n.x} ${n.y})`},
        svg('title', {}, [n.step_id, n.namespace + '/' + n.agent_name, n.capability, ...(n.violations || []),
          ...denials.map(c => 'denied: ' + c), (n.labels || []).length ? 'result labels: ' + n.labels.join(', ') : null].filter(Boolean).join('\n')),
        svg('rect', {width: W, height: H, rx: 6}),
        svg('text', {class: 'step', x: 8, y: 17}, n.step_id + (n.external ? ' (earlier phase)' : '')),
        svg('text', {class: 'agent', x: 8, y: 34}, (n.namespace || '') + '/' + (n.agent_name || '')),
        svg('text', {class: 'capability', x: 8, y: 51}, n.capability || ''),
        (n.violations || []).length ? svg('text', {class: 'violation', x: 8, y: 68}, '✕ ' + n.violations.join(', ')) : null,
        denials.length ? svg('text', {class: 'denial', x: 8, y: 68}, 'denied: ' + denials.join(', ')) : null,
        nodeLabels(n.labels || [], W)));
    }
    return el('div', {class: 'graph-box' + (g.rejected ? ' rejected' : ''), 'data-phase': g.phase},
      el('div', {class: 'legend'}, (g.rejected ? 'Rejected candidate' : 'Accepted plan') + (g.plan_id ? ' ' + g.plan_id : '') +
        ' — solid edge: depends_on, dashed: {{step-…}} reference' + (g.rejected ? '' : ', red: a check of the step was denied, chips: the labels of its result')),
      g.nodes.length ? s : el('p', {class: 'muted'}, 'No steps.'));
  }

  // nodeLabels draws a node's result labels as chips on its last row, as many as fit
  // in width w, then "+N".
  function nodeLabels(labels, w) {
    if (!labels.length) return null;
    const g = svg('g', {class: 'labels', transform: 'translate(8 75)'});
    let x = 0;
    for (let i = 0; i < labels.length; i++) {
      const text = labels[i], cw = 7 * text.length + 10;
      if (x + cw > w - 16 - (i < labels.length - 1 ? 28 : 0)) {
        g.append(svg('text', {class: 'more', x: x + 2, y: 12}, '+' + (labels.length - i)));
        break;
      }
      g.append(svg('g', {class: 'label-chip', 'data-label': text, transform: `translate(${x} 0)`},
        svg('rect', {width: cw, height: 16, rx: 8}), svg('text', {x: 5, y: 12}, text)));
      x += cw + 4;
    }
    return g;
  }

  function preExecution(rec, graphs) {
    const before = rec.pipeline_hooks.filter(i => i.phase === 'before_planning');
    const phases = new Set();
    rec.pipeline_hooks.filter(i => i.phase === 'after_planning').forEach(i => phases.add(i.plan_phase || 0));
    (rec.phases || []).forEach(p => phases.add(p.phase));
    (rec.rejections || []).forEach(r => phases.add(r.phase));
    graphs.forEach(g => phases.add(g.phase));
    const sections = [...phases].sort((a, b) => a - b).map(n => el('section', {class: 'phase', 'data-phase': n},
      el('h3', {}, 'Phase ' + n + ': after_planning'),
      el('div', {class: 'cards'},
        rec.pipeline_hooks.filter(i => i.phase === 'after_planning' && (i.plan_phase || 0) === n).map(i => invocationCard(i, rec)),
        (rec.rejections || []).filter(r => r.phase === n).map(rejectionCard)),
      graphs.filter(g => g.phase === n).map(drawGraph)));
    return [
      guardDenials(rec.operations || []),
      el('h3', {}, 'before_planning'),
      before.length ? el('div', {class: 'cards'}, before.map(i => invocationCard(i, rec))) : el('p', {class: 'muted'}, 'No before_planning invocation.'),
      sections,
    ];
  }

  // guardDenials lists the request's refused operation checks (a guard's or plan
  // binding's denial, a guard error), so that they show on the first tab.
  function guardDenials(ops) {
    const refused = ops.filter(o => o.outcome !== 'allow');
    if (!refused.length) return null;
    return [el('h3', {}, 'Guard denials'), el('div', {class: 'cards', id: 'guard-denials'}, refused.map(o =>
      el('article', {class: 'card denial', 'data-outcome': o.outcome, 'data-step': o.step_id || '', 'data-code': o.code || ''},
        el('header', {}, el('h4', {}, o.operation + (o.step_id ? ' ' + o.step_id : '')), badge(o.outcome),
          o.code ? el('code', {class: 'code'}, o.code) : null),
        facts([
          ['Tool', [o.namespace, o.agent_name, o.capability].filter(Boolean).join('/')],
          ['Reason', o.reason],
          ['Rule', o.guard ? o.guard + (o.guard_index !== undefined ? ' [' + o.guard_index + ']' : '') : null],
          ['Request labels', labelChips(o.labels, 'request')],
          ['Call labels', labelChips(o.call_labels, 'call')],
          ['Decision id', o.decision_id],
          ['At', time(o.started_at)],
        ]))))];
  }

  const OPERATION_FIELDS = ['operation', 'step_id', 'namespace', 'agent_name', 'capability', 'outcome', 'code', 'reason', 'guard',
    'labels', 'call_labels',
    'guard_index', 'binding', 'generation', 'policy_revision', 'live_generation', 'live_policy_revision', 'started_at', 'duration'];

  function operationsTable(ops) {
    if (!ops.length) return el('p', {class: 'muted'}, 'No operation check.');
    return el('table', {id: 'operations'},
      el('thead', {}, el('tr', {}, ['#', 'Operation', 'Step', 'Tool', 'Outcome', 'Code / reason', 'Rule', 'Binding', 'Generation / revision', 'Started', 'Finish']
        .map(h => el('th', {}, h)))),
      el('tbody', {}, ops.map((o, i) => el('tr', {'data-outcome': o.outcome},
        el('td', {}, i + 1),
        el('td', {}, o.operation),
        el('td', {class: 'mono'}, o.step_id || ''),
        el('td', {}, [o.namespace, o.agent_name, o.capability].filter(Boolean).join('/')),
        el('td', {}, badge(o.outcome)),
        el('td', {}, o.code ? el('code', {}, o.code) : null, o.reason ? el('div', {}, o.reason) : null, findingLists(o.would_deny),
          (o.labels || []).length ? el('div', {}, 'labels ', labelChips(o.labels, 'request')) : null,
          (o.call_labels || []).length ? el('div', {}, 'call labels ', labelChips(o.call_labels, 'call')) : null),
        el('td', {}, o.guard ? o.guard + (o.guard_index !== undefined ? ' [' + o.guard_index + ']' : '') : ''),
        el('td', {}, o.binding || ''),
        el('td', {class: 'mono'}, o.generation || '', el('div', {}, o.policy_revision || ''),
          o.live_generation ? el('div', {class: 'muted'}, 'live: ' + o.live_generation + ' ' + (o.live_policy_revision || '')) : null),
        el('td', {}, time(o.started_at), el('div', {class: 'muted'}, duration(o.duration)),
          extras(o, OPERATION_FIELDS).map(([k, v]) => el('div', {class: 'muted'}, k + ': ' + v))),
        el('td', {}, o.finish ? [badge(o.finish.status), o.finish.retryable ? ' retryable' : '', ' ', duration(o.finish.duration),
          labelChips(o.finish.labels, 'result'),
          o.finish.error ? el('pre', {class: 'error-text'}, o.finish.error) : null,
          o.finish.response !== undefined ? json(o.finish.response) : null] : el('span', {class: 'muted'}, 'not reported'))))));
  }

  function postExecution(rec) {
    const cards = stage => {
      const invs = rec.pipeline_hooks.filter(i => i.phase === stage);
      return invs.length ? el('div', {class: 'cards'}, invs.map(i => invocationCard(i, rec))) : el('p', {class: 'muted'}, 'No ' + stage + ' invocation.');
    };
    return [
      el('h3', {}, 'after_execution'), cards('after_execution'),
      el('h3', {}, 'after_synthesis'), cards('after_synthesis'),
      el('h3', {}, 'Operation checks'), operationsTable(rec.operations || []),
      rec.result ? [el('h3', {}, 'Execution result'), json(rec.result)] : null,
      rec.final_response ? [el('h3', {}, 'Final response'), facts([['Source', rec.final_response_source]]),
        el('pre', {class: 'final-response'}, rec.final_response)] : null,
    ];
  }

  function tabs(panels) {
    const bar = el('div', {class: 'tabs', role: 'tablist'});
    const bodies = panels.map(([, body], i) => el('div', {role: 'tabpanel', class: 'panel', hidden: i > 0}, body));
    panels.forEach(([name], i) => {
      const b = el('button', {type: 'button', role: 'tab', 'aria-selected': String(i === 0), 'data-tab': name}, name);
      b.addEventListener('click', () => {
        bar.querySelectorAll('button').forEach((x, j) => x.setAttribute('aria-selected', String(j === i)));
        bodies.forEach((x, j) => { x.hidden = j !== i; });
      });
      bar.append(b);
    });
    return [bar, bodies];
  }

  async function requestPage(id) {
    document.title = id + ' — agentd records';
    show(el('h1', {}, id), el('p', {class: 'muted'}, 'Loading…'));
    let rec, graphs;
    try {
      [rec, graphs] = await Promise.all([
        api('/v1/executions/' + encodeURIComponent(id)),
        api('/ui/graphs/' + encodeURIComponent(id)),
      ]);
    } catch (e) {
      show(el('h1', {}, id), el('p', {class: 'error', id: 'request-error'}, e.message), link('#/', '« All requests'));
      return;
    }
    const revisions = [...new Set((rec.operations || []).map(o => o.policy_revision).filter(Boolean))];
    show(
      link('#/', '« All requests'),
      el('h1', {id: 'request-id'}, rec.request_id),
      facts([
        ['Request', rec.request ? el('pre', {id: 'request-text'}, rec.request) : null],
        ['Status', badge(rec.status)], ['Lifecycle', badge(rec.lifecycle)], ['Cause', rec.cause],
        ['Generation', el('span', {class: 'mono'}, rec.generation || '')],
        ['Policy revision', revisions.join(', ')],
        ['Revision', rec.revision], ['Created', time(rec.created_at)], ['Updated', time(rec.updated_at)],
        ['Open until', time(rec.open_until)],
        ['Error', rec.error ? el('pre', {class: 'error-text'}, rec.error) : null],
        ...extras(rec, ['request_id', 'request', 'status', 'lifecycle', 'cause', 'generation', 'revision', 'created_at', 'updated_at',
          'open_until', 'error', 'final_response', 'final_response_source']),
      ]),
      tabs([
        ['Pre-Execution', preExecution(rec, graphs)],
        ['Post-Execution', postExecution(rec)],
        ['Record', json(rec)],
      ]));
  }

  // ---- The config.

  async function configPage() {
    document.title = 'config — agentd records';
    show(el('h1', {}, 'Live config'), el('p', {class: 'muted'}, 'Loading…'));
    let st;
    try {
      st = await api('/v1/status');
    } catch (e) {
      show(el('h1', {}, 'Live config'), el('p', {class: 'error'}, e.message));
      return;
    }
    const r = st.last_reload || {};
    const stages = ['before_planning', 'after_planning', 'after_execution', 'after_synthesis'];
    show(
      el('h1', {}, 'Live config'),
      facts([
        ['Generation', el('span', {class: 'mono', id: 'generation'}, st.generation || 'none')],
        ['Loaded', time(st.loaded_at)], ['Policy revision', st.policy_revision], ['Plan binding', st.plan_binding],
        ['Required hook', st.required_hook], ['Max request age', st.max_request_age],
      ]),
      el('h2', {}, 'Last reload'),
      facts([['Result', badge(r.result === 'ok' ? 'succeeded' : r.result)], ['At', time(r.at)], ['Last good', time(r.last_good)]]),
      r.error ? el('pre', {class: 'error-text', id: 'reload-error'}, r.error) : null,
      el('h2', {}, 'Hooks, in run order'),
      el('table', {id: 'hooks'},
        el('thead', {}, el('tr', {}, ['Stage', '#', 'Hook', 'When', 'Steps', 'Memo keys and notes', 'Defined at'].map(h => el('th', {}, h)))),
        el('tbody', {}, stages.flatMap(stage => (st.hooks[stage] || []).map((h, i) => el('tr', {'data-hook': h.name},
          el('td', {}, stage), el('td', {}, i + 1),
          el('td', {}, h.name, h.required ? [' ', badge('required')] : null),
          el('td', {class: 'mono'}, h.when || ''),
          el('td', {}, (h.steps || []).join(', ')),
          el('td', {}, (h.notes || []).map(n => el('div', {class: 'note'}, n))),
          el('td', {class: 'mono'}, h.file + ':' + h.line)))))),
      el('h2', {}, 'Guards'),
      (st.guards || []).length ? el('table', {id: 'guards'},
        el('thead', {}, el('tr', {}, ['#', 'Rule', 'Operation', 'Kind', 'Code', 'Defined at'].map(h => el('th', {}, h)))),
        el('tbody', {}, st.guards.map((g, i) => el('tr', {}, el('td', {}, i), el('td', {}, g.name), el('td', {}, g.operation),
          el('td', {}, g.kind), el('td', {}, g.code || ''), el('td', {class: 'mono'}, g.file + ':' + g.line)))))
        : el('p', {class: 'muted'}, 'No guard.'),
      el('h2', {}, 'Files'),
      el('ul', {id: 'files'}, (st.files || []).map(f => el('li', {class: 'mono'}, f))));
  }

  // approvalsPage lists the approvals, pending first: the held call, its parameters,
  // the rule that asked, a link to the request (its plan graph) and, for approver and
  // admin sessions, approve and reject buttons on the pending ones.
  async function approvalsPage() {
    document.title = 'approvals — agentd records';
    show(el('h1', {}, 'Approvals'), el('p', {class: 'muted'}, 'Loading…'));
    let list;
    try {
      list = await api('/v1/approvals');
    } catch (e) {
      show(el('h1', {}, 'Approvals'), el('p', {class: 'error'}, e.message));
      return;
    }
    const decides = settings.role === 'approver' || settings.role === 'admin' || !settings.role;
    const decide = (a, decision, row) => async () => {
      const comment = row.querySelector('input.comment').value;
      try {
        await post('/v1/approvals/' + encodeURIComponent(a.id), comment ? {decision, comment} : {decision});
        await approvalsPage();
      } catch (e) {
        row.querySelector('.decide-error').textContent = e.message;
      }
    };
    const rows = (list.approvals || []).map(a => {
      const row = el('tr', {'data-approval': a.id, 'data-status': a.status},
        el('td', {}, badge(a.status)),
        el('td', {}, requestLink(a.request_id), a.step_id ? ' ' + a.step_id : ''),
        el('td', {class: 'mono'}, [a.namespace, a.agent_name, a.capability].filter(Boolean).join(' / ')),
        el('td', {}, json(a.parameters || {})),
        el('td', {}, a.rule, a.reason ? el('div', {class: 'muted'}, a.reason) : null),
        el('td', {}, time(a.expires_at)),
        el('td', {}, a.decided_by ? a.decided_by + (a.comment ? ': ' + a.comment : '') : ''),
        el('td', {class: 'decide'}));
      if (decides && a.status === 'pending') {
        const cell = row.querySelector('td.decide');
        const approve = el('button', {type: 'button', class: 'approve'}, 'Approve');
        const reject = el('button', {type: 'button', class: 'reject'}, 'Reject');
        fill(cell, [el('input', {type: 'text', class: 'comment', placeholder: 'comment'}), approve, reject, el('div', {class: 'decide-error error'})]);
        approve.addEventListener('click', decide(a, 'approve', row));
        reject.addEventListener('click', decide(a, 'reject', row));
      }
      return row;
    });
    show(el('h1', {}, 'Approvals'),
      rows.length ? el('table', {id: 'approvals'},
        el('thead', {}, el('tr', {}, ['Status', 'Request', 'Call', 'Parameters', 'Rule', 'Expires', 'Decided by', ''].map(h => el('th', {}, h)))),
        el('tbody', {}, rows)) : el('p', {class: 'muted', id: 'no-approvals'}, 'No approval.'));
  }

  // ---- Routing.

  async function route() {
    try {
      await render();
    } catch (e) {
      show(el('h1', {}, 'Error'), el('p', {class: 'error', id: 'page-error'}, String(e && e.stack || e)));
    }
  }

  async function render() {
    const hash = location.hash || '#/';
    const at = hash.indexOf('?');
    const path = at < 0 ? hash.slice(1) : hash.slice(1, at);
    const params = new URLSearchParams(at < 0 ? '' : hash.slice(at + 1));
    if (path === '/' || path === '') return listPage(params);
    if (path.startsWith('/r/')) return requestPage(decodeURIComponent(path.slice(3)));
    if (path === '/config') return configPage();
    if (path === '/approvals') return approvalsPage();
    show(el('h1', {}, 'Not found'), link('#/', '« All requests'));
  }

  document.getElementById('logout').addEventListener('click', async () => {
    await fetch('/v1/session', {method: 'DELETE', credentials: 'same-origin'}).catch(() => null);
    location.assign(LOGIN);
  });
  window.addEventListener('hashchange', route);
  api('/ui/settings.json').then(s => { settings = s || {}; }).catch(() => {}).finally(route);
})();
