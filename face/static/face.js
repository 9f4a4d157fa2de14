// robot-face browser renderer: draws frames pushed by the daemon, sends taps and typed text.
"use strict";
(function () {
  const FACE_WIDTH = 1.8, FACE_HEIGHT = 1.6;
  const canvas = document.getElementById("face");
  const ctx = canvas.getContext("2d");
  const body = document.body;
  let ws = null, latest = null, dirty = false, retry = 250;
  // counters read by tests and the benchmark
  window.faceStats = { rafTicks: 0, framesDrawn: 0, messages: 0 };

  function resize() {
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(canvas.clientWidth * dpr));
    canvas.height = Math.max(1, Math.round(canvas.clientHeight * dpr));
    dirty = true;
  }

  function draw(frame) {
    const w = canvas.width, h = canvas.height;
    const s = Math.min(w / FACE_WIDTH, h / FACE_HEIGHT);
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = frame.params.background;
    ctx.fillRect(0, 0, w, h);
    ctx.setTransform(s, 0, 0, s, w / 2, h / 2 - 0.05 * s);
    for (const op of frame.ops) {
      const kind = op[0], a = op[2];
      ctx.fillStyle = op[1];
      ctx.beginPath();
      if (kind === "rrect") {
        if (ctx.roundRect) ctx.roundRect(a[0], a[1], a[2], a[3], a[4]);
        else ctx.rect(a[0], a[1], a[2], a[3]);
      } else if (kind === "circle") {
        ctx.arc(a[0], a[1], a[2], 0, 2 * Math.PI);
      } else {
        ctx.moveTo(a[0], a[1]);
        for (let i = 2; i < a.length; i += 2) ctx.lineTo(a[i], a[i + 1]);
        ctx.closePath();
      }
      ctx.fill();
    }
  }

  function tick() {
    window.faceStats.rafTicks++;
    if (dirty && latest) {
      draw(latest);
      window.faceStats.framesDrawn++;
      dirty = false;
    }
    requestAnimationFrame(tick);
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    ws = new WebSocket(proto + "//" + location.host + "/ws");
    ws.onopen = function () { body.dataset.connected = "true"; retry = 250; };
    ws.onmessage = function (ev) {
      const msg = JSON.parse(ev.data);
      window.faceStats.messages++;
      if (msg.type === "hello") {
        body.classList.toggle("text-box", !!msg.text_box);
        resize();
      } else if (msg.type === "frame") {
        latest = msg;
        dirty = true;
        if (body.dataset.state !== msg.params.state) body.dataset.state = msg.params.state;
        if (body.dataset.expression !== msg.params.expression) body.dataset.expression = msg.params.expression;
      }
    };
    ws.onclose = function () {
      body.dataset.connected = "false";
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 4000);
    };
  }

  function send(msg) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
  }

  canvas.addEventListener("pointerdown", function (ev) { ev.preventDefault(); send({ type: "tap" }); });
  document.getElementById("typed").addEventListener("submit", function (ev) {
    ev.preventDefault();
    const input = document.getElementById("typed-text");
    const text = input.value.trim();
    if (text) send({ type: "text", text: text });
    input.value = "";
  });
  window.addEventListener("resize", resize);
  resize();
  connect();
  requestAnimationFrame(tick);
})();
