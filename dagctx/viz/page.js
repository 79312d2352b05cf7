(function () {
  const view = document.getElementById('view');
  const panel = document.getElementById('panel');
  const status = document.getElementById('status');
  let selected = null;

  function esc(text) {
    const d = document.createElement('div'); d.textContent = text; return d.innerHTML;
  }
  function field(name, value) {
    return value ? '<dt>' + esc(name) + '</dt><dd>' + esc(value) + '</dd>' : '';
  }
  function show(id) {
    selected = id;
    let html = '<div id=panel-head></div>';
    if (DAGCTX.live) {
      html += '<p id=verbs>' + ['collapsed', 'summary', 'details', 'all'].map(function (s) {
        return '<button data-state="' + s + '">' + s + '</button>';
      }).join('') + '<button data-state="hidden">hide</button></p>' +
        '<p id=verb-result></p><div id=node-more>loading…</div>';
    }
    panel.innerHTML = html;
    refresh();
  }
  // The selected node's figures from the (new) view, and its panel data from the server.
  function refresh() {
    const id = selected;
    document.querySelectorAll('#treemap .selected').forEach(function (g) {
      g.classList.remove('selected');
    });
    const g = document.querySelector('#treemap g.node[data-node="' + CSS.escape(id) + '"]');
    if (g) g.classList.add('selected');
    const d = g ? g.dataset : null;
    let html = '<h2>' + esc(d ? (d.label || id) : id) + '</h2><dl>' + field('node', id);
    if (d) {
      html += field('rendered', d.rendered) + field('requested', d.requested) +
        field('tokens', d.tokens) + field('version', d.version) +
        (d.cut !== '0' ? field('lines cut', d.cut) : '') +
        field('why', d.why) + field('score', d.score);
    } else {
      const row = document.querySelector('tr[data-node="' + CSS.escape(id) + '"]');
      if (row) html += field('shown', 'not in the projection (' +
        row.cells[row.cells.length - 2].textContent + ')');
    }
    document.getElementById('panel-head').innerHTML = html + '</dl>';
    if (DAGCTX.live) more(id);
  }
  function more(id) {
    fetch('api/node/' + encodeURIComponent(id)).then(function (r) { return r.json(); })
      .then(function (n) {
        const box = document.getElementById('node-more');
        if (!box || selected !== id) return;
        if (n.error) { box.textContent = n.error; return; }
        let html = '<dl>' + field('type', n.type) + field('state', n.state) +
          field('version', String(n.version)) +
          field('parents', n.parents.map(function (p) { return p.id + ' ' + p.label; }).join(', ') || 'none') +
          '</dl>';
        n.renders.forEach(function (r) {
          html += '<h3>' + esc(r.state) + ' · ' + r.tokens + ' tokens</h3><pre>' + esc(r.text) + '</pre>';
        });
        box.innerHTML = html;
      });
  }
  function act(id, state) {
    fetch('api/node/' + encodeURIComponent(id) + '/state', {
      method: 'POST', headers: {'content-type': 'application/json'},
      body: JSON.stringify({state: state})
    }).then(function (r) { return r.json(); }).then(function (answer) {
      const out = document.getElementById('verb-result');
      if (out) out.textContent = answer.message;
    });
  }
  document.addEventListener('click', function (event) {
    const button = event.target.closest('#verbs button');
    if (button && selected) { act(selected, button.dataset.state); return; }
    const node = event.target.closest('[data-node]');
    if (node && (node.tagName === 'TR' || node.classList.contains('node'))) show(node.dataset.node);
  });
  if (DAGCTX.live) {
    const events = new EventSource('events');
    events.addEventListener('view', function (event) {
      const update = JSON.parse(event.data);
      view.innerHTML = update.view;
      status.textContent = 'turn ' + update.turn + ' · updated ' + new Date().toLocaleTimeString();
      document.body.dataset.turn = update.turn;
      if (selected) refresh();
    });
    events.onerror = function () { status.textContent = 'disconnected; retrying…'; };
  }
})();
