// The premath observation dashboard: one page fed by server-sent events from observe-serve.
// Every string from the stores reaches the page through textContent or an attribute, never as
// markup. The page only reads: every change still goes through premath's gated surfaces.
"use strict";

(function () {
  const PER_COLUMN = 200;
  const GRAPH_NODES = 40;
  const COLUMNS = ["needs_person", "blocked", "ready", "in_progress", "closed"];
  const SVG = "http://www.w3.org/2000/svg";

  const state = {
    surface: null,
    issues: new Map(),
    bottleneck: null,
    trajectory: null,
    kpi: null,
    runs: null,
    issueSteps: {},
    why: null,
    workers: null,
    live: null,
    issuesError: null,
    sources: null,
    offsetMs: 0,
    version: 0,
    selected: null,
    failuresFirst: false,
  };

  const $ = (id) => document.getElementById(id);

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "className") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key.startsWith("data-")) node.setAttribute(key, String(value));
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function show(value) {
    return value === null || value === undefined || value === "" ? "-" : String(value);
  }

  function pretty(value) {
    return JSON.stringify(value, null, 2);
  }

  function at(root, ...keys) {
    let value = root;
    for (const key of keys) {
      if (value === null || typeof value !== "object") return undefined;
      value = value[key];
    }
    return value;
  }

  function now() {
    return Date.now() + state.offsetMs;
  }

  // --- surface: the reference page's cards and panes ------------------------------------------

  function counted(count, noun) {
    // "1 step", "2 steps": premath/terminal.py's counted(), for the page
    return count + " " + (count === 1 ? noun : noun + "s");
  }

  function setCard(id, value, tone) {
    const card = $(id);
    card.classList.remove("ok", "warn", "bad");
    if (tone) card.classList.add(tone);
    card.querySelector(".value").textContent = show(value);
  }

  function needsAttentionView(summary) {
    return {
      needsAttention: summary.needsAttention,
      state: summary.state,
      topFailureClass: summary.topFailureClass,
      latestProjectionDigest: summary.latestProjectionDigest,
      latestInstructionId: summary.latestInstructionId,
      coherence: summary.coherence === undefined ? null : summary.coherence,
      ...(summary.live ? { live: summary.live } : {}),
    };
  }

  function fillList(id, items) {
    const list = $(id);
    clear(list);
    const values = Array.isArray(items) ? items : [];
    if (values.length === 0) list.append(el("li", { text: "(none)" }));
    for (const item of values) list.append(el("li", { text: item }));
  }

  function renderSurface() {
    const surface = state.surface;
    if (!surface) return;
    if (surface.error) {
      for (const card of document.querySelectorAll("#cards .card")) {
        card.classList.remove("ok", "warn", "bad");
        card.querySelector(".value").textContent = "-";
      }
      setCard("card-state", "unavailable", "bad");
      $("pane-latest").textContent = "surface unavailable: " + surface.error;
      $("pane-attention").textContent = "";
      $("pane-coherence").textContent = "";
      return;
    }
    const summary = surface.summary || {};
    const coherence = summary.coherence;
    const stateTone = { accepted: "ok", running: "warn", rejected: "bad", error: "bad" }[summary.state];
    setCard("card-state", summary.state, stateTone);
    setCard("card-attention", String(summary.needsAttention), summary.needsAttention ? "bad" : "ok");
    setCard("card-top-failure", summary.topFailureClass);
    setCard("card-projection", summary.latestProjectionDigest);
    setCard("card-instruction", summary.latestInstructionId);
    const drift = at(coherence, "policyDrift", "driftDetected");
    setCard("card-drift", drift === undefined ? "-" : drift ? "drift" : "stable", drift ? "bad" : null);
    const unknown = at(coherence, "instructionTyping", "unknownCount") || 0;
    const percent = Number(at(coherence, "instructionTyping", "unknownRatePercent") || 0);
    setCard("card-unknown", unknown + " (" + percent.toFixed(2) + "%)", unknown > 0 ? "warn" : null);
    const rejects = at(coherence, "proposalRejectClasses", "totalRejectCount") || 0;
    setCard("card-rejects", rejects, rejects > 0 ? "warn" : null);
    const coherent = at(coherence, "issuePartition", "isCoherent");
    setCard("card-partition", coherent === false ? "incoherent" : "coherent", coherent === false ? "bad" : null);
    const active = at(coherence, "dependencyIntegrity", "active", "hasCycle") === true;
    const full = at(coherence, "dependencyIntegrity", "full", "hasCycle") === true;
    setCard("card-cycles", (active ? "yes" : "no") + "/" + (full ? "yes" : "no"), active ? "bad" : full ? "warn" : null);
    const liveStale = at(summary, "live", "staleLeaseIssueIds");
    const stale = Array.isArray(liveStale) ? liveStale.length : at(coherence, "leaseHealth", "staleCount") || 0;
    const contended = at(coherence, "leaseHealth", "contendedCount") || 0;
    setCard("card-claims", stale + "/" + contended, stale || contended ? "bad" : null);
    const lanes = at(coherence, "workerLaneThroughput") || {};
    const unassigned = lanes.unassignedInProgressCount || 0;
    setCard(
      "card-wip",
      (lanes.workerCount || 0) + "/" + (lanes.inProgressCount || 0) + "/" + unassigned,
      unassigned > 0 ? "warn" : null,
    );
    $("pane-latest").textContent = pretty(surface);
    $("pane-attention").textContent = pretty(needsAttentionView(summary));
    $("pane-coherence").textContent = coherence === undefined ? "(none)" : pretty(coherence);
    fillList("list-changed", at(surface, "latest", "delta", "changedPaths"));
    fillList("list-required", at(surface, "latest", "required", "requiredChecks"));
    fillList("list-reasons", [...(at(coherence, "attentionReasons") || []), ...(at(summary, "live", "attentionReasons") || [])]);
    const digest = $("projection-digest");
    if (!digest.value && summary.latestProjectionDigest) digest.value = summary.latestProjectionDigest;
    const instruction = $("instruction-id");
    if (!instruction.value && summary.latestInstructionId) instruction.value = summary.latestInstructionId;
  }

  async function drill(pane, url) {
    $(pane).textContent = "Loading…";
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      const body = await response.json();
      $(pane).textContent = response.ok ? pretty(body) : response.status + ": " + show(body.error);
    } catch (error) {
      $(pane).textContent = "Load failed: " + error;
    }
  }

  // --- board ------------------------------------------------------------------------------------

  function leaseState(lease) {
    if (!lease) return "none";
    if (lease.expiresAtMs === null || lease.expiresAtMs === undefined) return "unknown";
    return lease.expiresAtMs <= now() ? "stale" : "active";
  }

  function countdown(lease) {
    const left = Math.round((lease.expiresAtMs - now()) / 1000);
    if (left <= 0) return "stale " + duration(-left) + " ago";
    return "expires in " + duration(left);
  }

  function duration(seconds) {
    const s = Math.abs(seconds);
    if (s >= 86400) return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
    if (s >= 3600) return Math.floor(s / 3600) + "h " + String(Math.floor((s % 3600) / 60)).padStart(2, "0") + "m";
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  function leaseTag(lease) {
    const current = leaseState(lease);
    if (current === "none") return null;
    if (current === "unknown") return el("span", { className: "tag", text: "lease: no expiry" });
    return el("span", {
      className: "tag lease " + current,
      "data-expires": lease.expiresAtMs,
      title: "lease " + show(lease.leaseId) + " held by " + show(lease.owner) + ", expires " + show(lease.expiresAt),
      text: countdown(lease),
    });
  }

  function matches(issue, query, assignee, lease) {
    if (assignee && (issue.assignee || "") !== assignee) return false;
    if (lease && leaseState(issue.lease) !== lease) return false;
    if (!query) return true;
    const haystack = (issue.id + " " + issue.title + " " + (issue.assignee || "")).toLowerCase();
    return haystack.includes(query);
  }

  function byPriority(a, b) {
    const pa = a.priority === null ? 99 : a.priority;
    const pb = b.priority === null ? 99 : b.priority;
    return pa - pb || b.downstream - a.downstream || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  }

  // "attempt 2 of 3 · gate_timeout": the issue's last step failed at that attempt of its rule.
  function retryText(step) {
    const attempt = step.attempt === null ? "failed" : "attempt " + step.attempt + (step.maxAttempts === null ? "" : " of " + step.maxAttempts);
    return attempt + " · " + step.resultClass;
  }

  function issueCard(issue) {
    const tags = [];
    if (issue.escalation) tags.push(el("span", { className: "tag escalated", text: "escalated · needs a person" }));
    else if (issue.column === "needs_person") tags.push(el("span", { className: "tag escalated", text: "blocked by an escalation" }));
    const step = state.issueSteps[issue.id];
    if (step && step.failed && issue.column !== "closed") tags.push(el("span", { className: "tag retry", text: retryText(step) }));
    if (issue.id === state.bottleneck) tags.push(el("span", { className: "tag hot", text: "bottleneck" }));
    if (issue.assignee) tags.push(el("span", { className: "tag", text: "@" + issue.assignee }));
    tags.push(leaseTag(issue.lease));
    if (issue.column === "blocked" && issue.blockers.length) {
      tags.push(el("span", { className: "tag blocker", text: "waits on " + issue.blockers.join(", ") }));
    }
    if (issue.column === "blocked" && issue.status !== "open") {
      tags.push(el("span", { className: "tag", text: "status " + show(issue.status) }));
    }
    if (issue.downstream > 0) tags.push(el("span", { className: "tag", text: issue.downstream + " waiting" }));
    const classes = ["issue"];
    if (issue.id === state.selected) classes.push("selected");
    if (issue.id === state.bottleneck) classes.push("bottleneck");
    return el(
      "li",
      {},
      el(
        "button",
        { type: "button", className: classes.join(" "), "data-id": issue.id, onclick: () => select(issue.id, true) },
        el("span", { className: "row1" }, el("span", { className: "mono", text: issue.id }), el("span", { text: issue.priority === null ? "" : "P" + issue.priority })),
        el("span", { className: "title", text: issue.title || "(untitled)" }),
        el("span", { className: "meta" }, ...tags),
      ),
    );
  }

  function renderAssignees() {
    const select = $("filter-assignee");
    const chosen = select.value;
    const names = [...new Set([...state.issues.values()].map((i) => i.assignee).filter(Boolean))].sort();
    const current = [...select.options].slice(1).map((o) => o.value);
    if (names.join("\u0000") === current.join("\u0000")) return;
    clear(select);
    select.append(el("option", { value: "", text: "Any assignee" }));
    for (const name of names) select.append(el("option", { value: name, text: name }));
    select.value = names.includes(chosen) ? chosen : "";
  }

  function renderBoard() {
    renderAssignees();
    const query = $("search").value.trim().toLowerCase();
    const assignee = $("filter-assignee").value;
    const lease = $("filter-lease").value;
    const grouped = Object.fromEntries(COLUMNS.map((c) => [c, []]));
    for (const issue of state.issues.values()) {
      if (matches(issue, query, assignee, lease)) grouped[issue.column].push(issue);
    }
    for (const column of COLUMNS) {
      const section = document.querySelector('.column[data-column="' + column + '"]');
      const list = section.querySelector(".column-cards");
      const items = grouped[column].sort(byPriority);
      section.querySelector(".count").textContent = String(items.length);
      clear(list);
      for (const issue of items.slice(0, PER_COLUMN)) list.append(issueCard(issue));
      if (items.length > PER_COLUMN) {
        list.append(el("li", { className: "more", text: items.length - PER_COLUMN + " more: narrow the search" }));
      }
    }
    renderDetail();
  }

  function select(id, focus) {
    if (state.selected !== id) state.why = null;
    state.selected = id;
    loadWhy(id);
    for (const card of document.querySelectorAll(".issue.selected")) card.classList.remove("selected");
    const card = document.querySelector('.issue[data-id="' + CSS.escape(id) + '"]');
    if (card) {
      card.classList.add("selected");
      if (focus) card.focus();
    }
    renderDetail();
  }

  function queueState(queue) {
    if (!queue) return null;
    const failed = queue.failureClass ? " · " + queue.failureClass : "";
    const paths = queue.conflictPaths && queue.conflictPaths.length ? " (" + queue.conflictPaths.join(", ") + ")" : "";
    const deciding = queue.state !== "landed" && queue.state !== "failed";
    const branch = deciding && queue.branch ? " " + queue.branch : "";
    const onto = deciding && queue.onto ? " onto " + queue.onto.slice(0, 12) : "";
    return show(queue.state) + branch + onto + failed + paths;
  }

  function renderDetail() {
    const panel = $("detail");
    const issue = state.selected === null ? null : state.issues.get(state.selected);
    if (!issue) {
      panel.hidden = true;
      return;
    }
    panel.hidden = false;
    $("detail-title").textContent = issue.id + ": " + (issue.title || "(untitled)");
    const fields = $("detail-fields");
    clear(fields);
    const rows = [
      ["status", issue.status],
      ["column", issue.column.replace("_", " ")],
      ["priority", issue.priority],
      ["assignee", issue.assignee],
      ["lease", issue.lease ? show(issue.lease.owner) + " · " + show(issue.lease.leaseId) : null],
      ["expires", issue.lease ? show(issue.lease.expiresAt) : null],
      ["blocked by", issue.blockers.join(", ")],
      ["depends on", issue.dependsOn.join(", ")],
      ["waiting on it", issue.downstream],
      ["updated", issue.updatedAt],
      ["merge queue", queueState(issue.mergeQueue)],
      ["integration", issue.mergeQueue ? issue.mergeQueue.integrationCommit : null],
    ];
    for (const [name, value] of rows) fields.append(el("dt", { text: name }), el("dd", { text: show(value) }));
    if (issue.lease && issue.lease.expiresAtMs !== null) {
      fields.append(el("dt", { text: "countdown" }), el("dd", {}, leaseTag(issue.lease)));
    }
    renderWhy(issue.id);
  }

  // The detail's answer to "why is it here": fetched when an issue is opened, and again when
  // its row or the trajectory changes.
  async function loadWhy(id) {
    try {
      const response = await fetch("issues/" + encodeURIComponent(id) + "/why", { headers: { Accept: "application/json" } });
      const body = await response.json();
      state.why = { id: id, body: response.ok ? body : null, error: response.ok ? null : show(body.error) };
    } catch (error) {
      state.why = { id: id, body: null, error: String(error) };
    }
    if (state.selected === id) renderWhy(id);
  }

  function renderWhy(id) {
    const fields = $("why-fields");
    clear(fields);
    $("why-notes").textContent = "";
    $("why-output").textContent = "";
    $("why-output-name").textContent = "";
    const why = state.why && state.why.id === id ? state.why : null;
    if (!why) {
      $("why-note").textContent = "Loading…";
      return;
    }
    if (why.error) {
      $("why-note").textContent = "Unavailable: " + why.error;
      return;
    }
    const body = why.body;
    const last = body.lastStep;
    const failure = body.lastFailure;
    $("why-note").textContent = body.stepCount + " steps, " + body.failedStepCount + " failed.";
    const blockers = body.openBlockers.map((b) => b.id + " (" + show(b.status) + ")").join(", ");
    const rows = [
      ["open blockers", blockers || "none"],
      ["last step", last ? last.stepId + " · " + last.resultClass : null],
      ["failure class", failure ? failure.resultClass : null],
      ["attempts", failure ? retryText(failure) : null],
      ["failure classes", failure ? failure.failureClasses.join(", ") : null],
      ["branch", body.delivered ? body.delivered.branch : null],
      ["commit", body.delivered ? body.delivered.commit : null],
    ];
    for (const [name, value] of rows) fields.append(el("dt", { text: name }), el("dd", { className: name === "commit" ? "mono" : null, text: show(value) }));
    $("why-notes").textContent = body.notes || "(no notes)";
    const output = failure && failure.output;
    $("why-output-name").textContent = output ? output.path : "";
    $("why-output").textContent = output ? output.text : "(none)";
  }

  function tickLeases() {
    for (const tag of document.querySelectorAll(".tag.lease")) {
      const expires = Number(tag.getAttribute("data-expires"));
      const lease = { expiresAtMs: expires };
      const current = leaseState(lease);
      tag.textContent = countdown(lease);
      tag.classList.toggle("stale", current === "stale");
      tag.classList.toggle("active", current === "active");
    }
  }

  function visibleCards() {
    return [...document.querySelectorAll(".issue")];
  }

  function moveSelection(step) {
    const cards = visibleCards();
    if (!cards.length) return;
    let index = cards.findIndex((c) => c.getAttribute("data-id") === state.selected);
    index = index < 0 ? 0 : Math.min(cards.length - 1, Math.max(0, index + step));
    select(cards[index].getAttribute("data-id"), true);
  }

  function moveColumn(step) {
    const issue = state.selected === null ? null : state.issues.get(state.selected);
    let column = issue ? COLUMNS.indexOf(issue.column) : -1;
    for (let tries = 0; tries < COLUMNS.length; tries++) {
      column = (column + step + COLUMNS.length) % COLUMNS.length;
      const first = document.querySelector('.column[data-column="' + COLUMNS[column] + '"] .issue');
      if (first) {
        select(first.getAttribute("data-id"), true);
        return;
      }
    }
  }

  function onKey(event) {
    const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement;
    if (event.key === "Escape") {
      if (typing) {
        event.target.blur();
        if (event.target === $("search")) {
          $("search").value = "";
          renderBoard();
        }
      } else {
        state.selected = null;
        renderBoard();
      }
      return;
    }
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    const actions = {
      "/": () => $("search").focus(),
      j: () => moveSelection(1),
      ArrowDown: () => moveSelection(1),
      k: () => moveSelection(-1),
      ArrowUp: () => moveSelection(-1),
      l: () => moveColumn(1),
      ArrowRight: () => moveColumn(1),
      h: () => moveColumn(-1),
      ArrowLeft: () => moveColumn(-1),
      Enter: () => (state.selected === null ? moveSelection(0) : renderDetail()),
      f: () => {
        $("failures-first").checked = !$("failures-first").checked;
        state.failuresFirst = $("failures-first").checked;
        renderTrajectory();
      },
    };
    const action = actions[event.key];
    if (action) {
      event.preventDefault();
      action();
    }
  }

  // --- dependency graph -------------------------------------------------------------------------

  function renderGraph() {
    const canvas = $("graph");
    clear(canvas);
    const open = [...state.issues.values()].filter((i) => i.column !== "closed");
    const byId = new Map(open.map((i) => [i.id, i]));
    const linked = open.filter((i) => i.downstream > 0 || i.blockers.some((b) => byId.has(b)));
    if (!linked.length) {
      $("graph-note").textContent = state.issues.size ? "No open issue waits on another." : "No issues to draw.";
      canvas.setAttribute("width", "0");
      canvas.setAttribute("height", "0");
      return;
    }
    linked.sort((a, b) => b.downstream - a.downstream || (a.id < b.id ? -1 : 1));
    const chosen = new Map(linked.slice(0, GRAPH_NODES).map((i) => [i.id, i]));
    $("graph-note").textContent =
      "Open issues that wait on or hold up others (" + chosen.size + " of " + linked.length + " shown, most downstream work first); arrows point from a blocker to the issue waiting on it." +
      (state.bottleneck ? " Bottleneck: " + state.bottleneck + "." : "");
    const depth = new Map();
    const depthOf = (id, seen) => {
      if (depth.has(id)) return depth.get(id);
      if (seen.has(id)) return 0;
      seen.add(id);
      const issue = chosen.get(id);
      let d = 0;
      for (const blocker of issue.blockers) if (chosen.has(blocker)) d = Math.max(d, depthOf(blocker, seen) + 1);
      depth.set(id, d);
      return d;
    };
    for (const id of chosen.keys()) depthOf(id, new Set());
    const layers = [];
    for (const [id, d] of depth) (layers[d] = layers[d] || []).push(id);
    const boxW = 150, boxH = 34, gapX = 60, gapY = 14;
    const place = new Map();
    layers.forEach((ids, d) => ids.sort().forEach((id, row) => place.set(id, { x: 10 + d * (boxW + gapX), y: 10 + row * (boxH + gapY) })));
    const width = 20 + layers.length * (boxW + gapX) - gapX;
    const height = 20 + Math.max(...layers.map((l) => l.length)) * (boxH + gapY) - gapY;
    canvas.setAttribute("width", String(width));
    canvas.setAttribute("height", String(height));
    canvas.setAttribute("viewBox", "0 0 " + width + " " + height);
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#94a3b8" }));
    defs.append(marker);
    canvas.append(defs);
    for (const issue of chosen.values()) {
      const to = place.get(issue.id);
      for (const blocker of issue.blockers) {
        const from = place.get(blocker);
        if (!from) continue;
        const x1 = from.x + boxW, y1 = from.y + boxH / 2, x2 = to.x, y2 = to.y + boxH / 2;
        const mid = (x1 + x2) / 2;
        canvas.append(svg("path", { class: "edge", d: "M " + x1 + " " + y1 + " C " + mid + " " + y1 + ", " + mid + " " + y2 + ", " + x2 + " " + y2, "marker-end": "url(#arrow)" }));
      }
    }
    for (const issue of chosen.values()) {
      const at = place.get(issue.id);
      const hot = issue.id === state.bottleneck;
      const group = svg("g", { class: "node " + issue.column + (hot ? " bottleneck" : ""), transform: "translate(" + at.x + "," + at.y + ")", tabindex: 0, role: "button", "data-id": issue.id });
      group.append(svg("title", {}, issue.id + ": " + issue.title + " (" + issue.downstream + " waiting)"));
      group.append(svg("rect", { width: boxW, height: boxH, rx: 5 }));
      group.append(svg("text", { x: 6, y: 14, class: hot ? "tag-text" : "" }, (hot ? "⚑ " : "") + issue.id));
      const title = issue.title.length > 22 ? issue.title.slice(0, 21) + "…" : issue.title;
      group.append(svg("text", { x: 6, y: 28 }, title));
      group.addEventListener("click", () => select(issue.id, true));
      group.addEventListener("keydown", (event) => {
        if (event.key === "Enter") select(issue.id, true);
      });
      canvas.append(group);
    }
  }

  // --- trajectory, KPI, runs --------------------------------------------------------------------

  function stepKey(step) {
    return step.stepId + "\u0000" + step.finishedAt + "\u0000" + step.action;
  }

  function renderTrajectory() {
    const body = document.querySelector("#trajectory tbody");
    clear(body);
    const tail = state.trajectory;
    const note = $("trajectory-note");
    if (!tail) {
      note.textContent = liveNote("the trajectory");
      return;
    }
    if (tail.error) {
      note.textContent = "Trajectory unreadable: " + tail.error;
      return;
    }
    note.textContent = counted(tail.totalCount, "step") + ", " + tail.failedCount + " failed, " + tail.retryNeededCount + " needing a retry; the latest " + tail.latest.length + " shown.";
    const failed = new Set(tail.failed.map(stepKey));
    let rows = tail.latest;
    if (state.failuresFirst) {
      const rest = tail.latest.filter((s) => !failed.has(stepKey(s)));
      rows = [...tail.failed, ...rest].slice(0, Math.max(tail.latest.length, tail.failed.length));
    }
    for (const step of rows) {
      body.append(
        el(
          "tr",
          { className: failed.has(stepKey(step)) ? "failed" : null },
          el("td", { className: "mono", text: step.finishedAt }),
          el("td", { className: "mono", text: step.stepId }),
          el("td", { className: "mono", text: show(step.issueId) }),
          el("td", { text: step.action }),
          el("td", { text: step.resultClass }),
        ),
      );
    }
  }

  function renderKpi() {
    const facts = $("kpi");
    clear(facts);
    const kpi = state.kpi;
    const decision = $("kpi-decision");
    decision.className = "decision";
    if (!kpi) {
      decision.textContent = liveNote("the KPI");
      return;
    }
    if (kpi.error) {
      decision.textContent = "KPI unavailable: " + kpi.error;
      return;
    }
    decision.classList.add(kpi.decision.state);
    decision.textContent = kpi.decision.state + " (" + kpi.decision.reason + ")";
    const rows = [
      ["kpi", kpi.ratios.kpi],
      ["gate pass rate", kpi.ratios.gatePassRate],
      ["per worker per day", kpi.ratios.throughputPerWorkerPerDay],
      ["target / rollback", kpi.thresholds.targetKpi + " / " + kpi.thresholds.rollbackKpi],
      ["window", kpi.windowStart + " → " + kpi.windowEnd],
      ["rows", kpi.counts.windowRows + " (" + kpi.counts.completedRows + " completed, " + kpi.counts.failedRows + " failed)"],
      ["workers", kpi.counts.workerIds.join(", ") || "-"],
    ];
    for (const [name, value] of rows) facts.append(el("dt", { text: name }), el("dd", { text: show(value) }));
  }

  function renderRuns() {
    const body = document.querySelector("#runs tbody");
    clear(body);
    const runs = state.runs;
    const note = $("runs-note");
    if (!runs) {
      note.textContent = liveNote("experiment runs");
      return;
    }
    note.textContent = runs.length ? "" : "No experiment run yet.";
    for (const run of runs) {
      const href = "runs/" + encodeURIComponent(run.runId) + "/report";
      if (run.error) {
        body.append(el("tr", {}, el("td", { className: "mono", text: run.runId }), el("td", { colspan: 6, text: "unreadable: " + run.error })));
        continue;
      }
      const total = run.total || 0;
      body.append(
        el(
          "tr",
          {},
          el("td", { className: "mono", text: run.runId }),
          el("td", { text: show(run.experimentName || run.experimentId) }),
          el("td", { text: show(run.executor) }),
          el("td", {}, el("progress", { max: Math.max(total, 1), value: run.done }), " " + run.done + "/" + total),
          el("td", { text: run.successCount + " / " + run.failureCount + " / " + run.errorCount }),
          el("td", { text: run.running ? "running" : run.done >= total ? "finished" : "stopped" }),
          el("td", {}, el("a", { href: href, text: "report" })),
        ),
      );
    }
  }

  // --- the fleet's workers (specs/remote-workers.md "Workers") ---------------------------------

  function heartbeatMs(stamp) {
    // Issue-row stamps carry up to 9 fraction digits; Date.parse wants at most 3.
    return stamp ? Date.parse(stamp.replace(/(\.\d{3})\d+/, "$1")) : NaN;
  }

  function tickWorkers() {
    for (const cell of document.querySelectorAll("#workers td.beat")) {
      const at = Number(cell.dataset.at);
      cell.textContent = Number.isNaN(at) ? "-" : duration(Math.max(0, Math.round((now() - at) / 1000))) + " ago";
    }
  }

  function renderWorkers() {
    const body = document.querySelector("#workers tbody");
    clear(body);
    const section = state.workers;
    const note = $("workers-note");
    if (!section) {
      note.textContent = liveNote("the fleet's workers");
      return;
    }
    if (section.error) {
      note.textContent = "Worker registry unreadable: " + section.error;
      return;
    }
    const c = section.counts;
    note.textContent = section.workers.length ? c.running + " running · " + c.silent + " silent · " + c.gone + " gone" : "No worker has registered yet.";
    for (const worker of section.workers) {
      const status = worker.status === "gone" && worker.goneReason ? "gone (" + worker.goneReason + ")" : worker.status;
      const attempt = worker.attempt == null ? "-" : worker.attempt + (worker.maxAttempts ? " of " + worker.maxAttempts : "");
      const rate = worker.passRate == null ? "-" : Math.round(worker.passRate * 100) + "%";
      body.append(
        el(
          "tr",
          { className: "worker-" + worker.status, "data-worker": worker.workerId },
          el("td", { className: "mono", text: worker.workerId }),
          el("td", { text: show(worker.node || worker.host) }),
          el("td", { className: "worker-status", text: status }),
          el("td", { className: "mono", text: show(worker.issueId) }),
          el("td", { text: show(worker.phase) }),
          el("td", { text: attempt }),
          el("td", { className: "beat", "data-at": String(heartbeatMs(worker.lastHeartbeatAt)) }),
          el("td", { text: String(worker.steps) }),
          el("td", { text: String(worker.closes) }),
          el("td", { text: rate }),
        ),
      );
    }
    tickWorkers();
  }

  const QUEUE_ORDER = ["verifying", "merging", "queued"];

  function renderQueue() {
    // The merge queue in flight: issues in a transient queue state, the furthest along first,
    // each with the worker holding it (specs/remote-workers.md "Merge queue").
    const line = $("workers-queue");
    const inFlight = [...state.issues.values()]
      .filter((issue) => issue.mergeQueue && QUEUE_ORDER.includes(issue.mergeQueue.state))
      .sort((a, b) => QUEUE_ORDER.indexOf(a.mergeQueue.state) - QUEUE_ORDER.indexOf(b.mergeQueue.state) || (a.id < b.id ? -1 : 1));
    line.hidden = inFlight.length === 0;
    line.textContent = inFlight.length
      ? "Merge queue: " +
        inFlight
          .map((issue) => {
            const holder = issue.lease ? issue.lease.owner : issue.assignee;
            return issue.id + " " + queueState(issue.mergeQueue) + (holder ? " (" + holder + ")" : "");
          })
          .join(" · ")
      : "";
  }

  function liveNote(what) {
    return state.sources && !state.sources.live ? "Start observe-serve with --live to see " + what + "." : "Waiting for " + what + "…";
  }

  // --- the event stream -------------------------------------------------------------------------

  function apply(update, whole) {
    state.version = update.version;
    state.offsetMs = update.serverTimeMs - Date.now();
    if (whole) {
      state.issues = new Map((update.issues || []).map((i) => [i.id, i]));
      state.sources = update.sources;
      showViewer(update.viewer);
    } else if (update.issues) {
      for (const id of update.issues.remove) state.issues.delete(id);
      for (const issue of update.issues.upsert) state.issues.set(issue.id, issue);
    }
    for (const key of ["surface", "bottleneck", "trajectory", "kpi", "runs", "workers", "live", "issuesError", "issueSteps"]) {
      if (key in update) state[key] = update[key];
    }
    const selected = state.selected;
    if (selected !== null && !whole && (update.trajectory || (update.issues && update.issues.upsert.some((i) => i.id === selected)))) {
      loadWhy(selected);
    }
    render(whole ? null : update);
  }

  function render(update) {
    const touched = (key) => update === null || key in update;
    if (touched("surface")) renderSurface();
    if (touched("issues") || touched("bottleneck") || touched("issueSteps")) {
      renderBoard();
      renderGraph();
    }
    if (touched("trajectory")) renderTrajectory();
    if (touched("kpi")) renderKpi();
    if (touched("runs")) renderRuns();
    if (touched("workers")) renderWorkers();
    if (touched("issues") || touched("workers")) renderQueue();
    const liveError = $("live-error");
    const failed = state.live && state.live.ok === false;
    liveError.hidden = !failed;
    liveError.textContent = failed ? "Live rebuild failed (serving the last good surface): " + state.live.error : "";
    const issuesNote = $("issues-note");
    const issuesText = state.issuesError ? "Issue memory unreadable: " + state.issuesError : state.sources && !state.sources.live ? liveNote("issues") : "";
    issuesNote.hidden = !issuesText;
    issuesNote.textContent = issuesText;
    if (state.sources) {
      const s = state.sources;
      $("sources").textContent = "surface " + s.surface + (s.live ? " · issues " + s.issues + " · witnesses " + s.ciwitness : "");
    }
    const status = $("status");
    status.classList.remove("bad");
    status.textContent = "Live · updated " + new Date(now()).toLocaleTimeString() + " · version " + state.version + " · " + counted(state.issues.size, "issue");
  }

  // Who the page is logged in as, when the server asks for a login (a session cookie).
  function showViewer(viewer) {
    const session = viewer && viewer.via === "session";
    $("viewer").hidden = !session;
    $("viewer-name").textContent = session ? "Logged in as " + viewer.caller : "";
  }

  async function logout() {
    try {
      await fetch("logout", { method: "POST" });
    } finally {
      window.location.assign("login");
    }
  }

  function signedOut() {
    const status = $("status");
    status.classList.add("bad");
    clear(status);
    status.append("Logged out (the session ended, or the server restarted) · ", el("a", { href: "login", text: "log in again" }));
  }

  function connect() {
    const source = new EventSource("events");
    source.addEventListener("snapshot", (event) => apply(JSON.parse(event.data), true));
    source.addEventListener("delta", (event) => apply(JSON.parse(event.data), false));
    source.addEventListener("error", async () => {
      const status = $("status");
      status.classList.add("bad");
      status.textContent = "Disconnected · reconnecting…";
      if (source.readyState !== EventSource.CLOSED) return; // the browser reconnects by itself
      // Refused outright (an error status): ask why, then try again or send the person to log in.
      let answer = null;
      try {
        answer = await fetch("latest", { headers: { Accept: "application/json" } });
      } catch (error) {
        answer = null; // the server is down: try again
      }
      if (answer && answer.status === 401) {
        signedOut();
        return;
      }
      setTimeout(connect, 2000);
    });
  }

  function start() {
    $("search").addEventListener("input", renderBoard);
    $("filter-assignee").addEventListener("change", renderBoard);
    $("filter-lease").addEventListener("change", renderBoard);
    $("failures-first").addEventListener("change", (event) => {
      state.failuresFirst = event.target.checked;
      renderTrajectory();
    });
    $("detail-close").addEventListener("click", () => {
      state.selected = null;
      renderBoard();
    });
    $("projection-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const digest = encodeURIComponent($("projection-digest").value.trim());
      drill("pane-projection", "projection?digest=" + digest + "&match=" + encodeURIComponent($("projection-match").value));
    });
    $("instruction-form").addEventListener("submit", (event) => {
      event.preventDefault();
      drill("pane-instruction", "instruction?id=" + encodeURIComponent($("instruction-id").value.trim()));
    });
    $("logout").addEventListener("click", logout);
    document.addEventListener("keydown", onKey);
    setInterval(tickLeases, 1000);
    setInterval(tickWorkers, 1000);
    connect();
  }

  start();
})();
