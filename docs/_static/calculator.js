/* The calculator page: the roofline_book package itself, run in the reader's browser by
   Pyodide, with every file served from this site (_static/calculator/, see
   docs/_ext/roofline_calculator.py).

   window.rooflineBook.ready   a Promise, resolved once the package is importable (to the
                               manifest: the files, and the versions of the package, Pyodide
                               and Python)
   window.rooflineBook.run(argv, config)
                               runs `roofline-book ARGV` in the page; resolves to
                               {code, stdout, stderr}, the installed command's output.
                               config (optional): the text of a config.json, which the
                               command reads as `--model config.json` (cli.calculator.run)

   The form is drawn from the spec the page carries (roofline_book.book.calculator.spec);
   each change builds the command line, runs it with --json, and shows the package's own
   Chinese tables (roofline_book.cli.calculator.tables) and a roofline of the device. */
(function () {
  "use strict";

  const SVG = "http://www.w3.org/2000/svg";
  const script = document.currentScript;
  const base = new URL("calculator/", script.src);
  let pyodide = null;
  let calculator = null; // roofline_book.cli.calculator, a PyProxy

  function loadScript(url) {
    return new Promise((resolve, reject) => {
      const tag = document.createElement("script");
      tag.src = url;
      tag.onload = resolve;
      tag.onerror = () => reject(new Error(`无法载入 ${url}`));
      document.head.appendChild(tag);
    });
  }

  async function fetchBytes(url) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`无法载入 ${url}（HTTP ${response.status}）`);
    return response.arrayBuffer();
  }

  let onProgress = () => {};

  async function load() {
    const response = await fetch(new URL("manifest.json", base));
    if (!response.ok) throw new Error(`无法载入计算器的文件清单（HTTP ${response.status}）`);
    const manifest = await response.json();
    onProgress("正在载入 Pyodide（Python 解释器）……");
    await loadScript(new URL("pyodide/pyodide.js", base).href);
    // The package prints only into the StringIO of run(): nothing reaches the console.
    pyodide = await globalThis.loadPyodide({
      indexURL: new URL("pyodide/", base).href,
      stdout: () => {},
      stderr: () => {},
    });
    const site = pyodide.runPython("import sysconfig; sysconfig.get_paths()['purelib']");
    for (const wheel of manifest.wheels) {
      const name = wheel.path.split("/").pop();
      onProgress(`正在安装 ${name}……`);
      const bytes = await fetchBytes(new URL(wheel.path, base));
      pyodide.unpackArchive(bytes, "wheel", { extractDir: site });
    }
    onProgress("正在导入 roofline_book……");
    pyodide.runPython("import importlib; importlib.invalidate_caches()");
    calculator = pyodide.pyimport("roofline_book.cli.calculator");
    manifest.python = pyodide.runPython("import sys; sys.version.split()[0]");
    return manifest;
  }

  const ready = load();

  function toJs(proxy) {
    try {
      return proxy.toJs({ dict_converter: Object.fromEntries, create_proxies: false });
    } finally {
      proxy.destroy();
    }
  }

  async function run(argv, config) {
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === "string")) {
      throw new TypeError("argv must be an array of strings, e.g. ['op', 'gemm', '--m', '64']");
    }
    if (config !== undefined && config !== null && typeof config !== "string") {
      throw new TypeError("config must be the text of a config.json");
    }
    await ready;
    const args = pyodide.toPy(argv);
    try {
      // JavaScript's null reaches Python as JsNull, not None: no argument is no config
      return toJs(typeof config === "string" ? calculator.run(args, config) : calculator.run(args));
    } finally {
      args.destroy();
    }
  }

  function pythonJson(func, result) {
    const json = pyodide.pyimport("json");
    const value = json.loads(JSON.stringify(result));
    try {
      return toJs(calculator[func](value));
    } finally {
      value.destroy();
      json.destroy();
    }
  }

  window.rooflineBook = { ready, run };

  // ---------------------------------------------------------------- the form
  function element(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value === false || value === null || value === undefined) continue;
      node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) node.append(child);
    return node;
  }

  function field(label, input, note) {
    const wrapper = element("label", { class: "calc-field" }, element("span", {}, label), input);
    if (note) wrapper.append(element("small", {}, note));
    return wrapper;
  }

  function datalist(id, values) {
    const list = element("datalist", { id });
    for (const v of values) list.append(element("option", { value: v }));
    return list;
  }

  function select(name, options, chosen) {
    const node = element("select", { name });
    for (const [value, text] of options) {
      node.append(element("option", { value, selected: value === chosen }, text));
    }
    return node;
  }

  /* The page's address carries a command line, ?cmd=op gemm --m 4096 ... (the chapters'
     links, and the address after each change): its values prefill the form. */
  function fromCommand(text, spec) {
    const given = new Map();
    const words = (text || "").trim().split(/\s+/).filter((w) => w && w !== "roofline-book");
    if (words[0] !== "op" && words[0] !== "infer") return given;
    given.set("mode", words[0]);
    let i = 1;
    let flags = new Set();
    if (words[0] === "op" && words[1]) {
      const key = words[1].replace(/-/g, "_");
      given.set("operator", key);
      const operator = spec.operators.find((o) => o.key === key);
      if (operator) flags = new Set(operator.args.filter((a) => a.kind === "flag").map((a) => a.name));
      i = 2;
    }
    for (; i < words.length; i++) {
      if (!words[i].startsWith("--")) continue;
      const name = words[i].slice(2).replace(/-/g, "_");
      if (flags.has(name)) given.set(name, "true");
      else if (name.startsWith("no_") && flags.has(name.slice(3))) given.set(name.slice(3), "false");
      else if (i + 1 < words.length) given.set(name, words[++i]);
    }
    return given;
  }

  /* The link's command line as a terminal takes it, or null when it names no command the
     page has a form for. */
  function linkedArgv(text) {
    const words = (text || "").trim().split(/\s+/).filter((w) => w && w !== "roofline-book" && w !== "--json");
    return words[0] === "op" || words[0] === "infer" ? words : null;
  }

  function build(root, spec) {
    const query = new URLSearchParams(window.location.search).get("cmd");
    const given = fromCommand(query, spec);
    const params = { get: (name) => (given.has(name) ? given.get(name) : null) };
    /* Names in the link that no form choice spells as given (an unknown model, device or
       operator, or another spelling the command line accepts, e.g. H100-SXM): the link's own
       command runs first, and the page shows its error, or selects the names it answered
       with, instead of quietly showing the form's defaults. */
    const unmatched = [];
    if (params.get("mode") === "op" && params.get("operator") !== null &&
        !spec.operators.some((o) => o.key === params.get("operator"))) unmatched.push("operator");
    if (params.get("mode") === "infer" && params.get("model") !== null &&
        !spec.models.some((m) => m.key === params.get("model"))) unmatched.push("model");
    if (params.get("device") !== null && !spec.devices.some((d) => d.key === params.get("device")))
      unmatched.push("device");
    const linked = unmatched.length ? linkedArgv(query) : null;
    const form = element("form", { class: "calc-form", autocomplete: "off" });
    form.addEventListener("submit", (event) => event.preventDefault());
    form.append(datalist("calc-precisions", spec.precisions));
    form.append(datalist("calc-weight-formats", spec.weight_formats));

    const mode = params.get("mode") === "infer" ? "infer" : "op";
    const modes = element("fieldset", { class: "calc-modes" }, element("legend", {}, "计算对象"));
    for (const [value, text] of [
      ["op", "一个算子"],
      ["infer", "一个模型的推理"],
    ]) {
      const radio = element("input", { type: "radio", name: "mode", value, checked: value === mode });
      modes.append(element("label", { class: "calc-radio" }, radio, text));
    }
    form.append(modes);

    // one operator and its shape
    const opSet = element("fieldset", { class: "calc-op" }, element("legend", {}, "算子与形状"));
    const operators = Object.fromEntries(spec.operators.map((o) => [o.key, o]));
    const chosenOp = operators[params.get("operator")] ? params.get("operator") : spec.defaults.operator;
    const opSelect = select(
      "operator",
      spec.operators.map((o) => [o.key, `${o.key}：${o.label}`]),
      chosenOp
    );
    opSet.append(field("算子", opSelect));
    const argBox = element("div", { class: "calc-args" });
    opSet.append(argBox);
    form.append(opSet);

    function drawArgs(key, fromQuery) {
      argBox.replaceChildren();
      for (const arg of operators[key].args) {
        const given = fromQuery ? params.get(arg.name) : null;
        let input;
        if (arg.kind === "flag") {
          const on = given !== null ? ["1", "true", "yes", "on"].includes(given) : arg.default === true;
          input = element("input", { type: "checkbox", name: `arg:${arg.name}`, checked: on });
          input.dataset.default = String(arg.default === true);
        } else {
          const value = given !== null ? given : arg.example !== null ? String(arg.example) : "";
          const placeholder = arg.required ? "必填" : arg.default === null ? "可省略" : `默认 ${arg.default}`;
          input = element("input", {
            type: "text",
            name: `arg:${arg.name}`,
            value,
            placeholder,
            required: arg.required,
            list: arg.name.endsWith("dtype") ? "calc-precisions" : null,
            inputmode: arg.kind === "size" ? "numeric" : null,
            spellcheck: "false",
          });
        }
        input.dataset.flag = arg.flag;
        input.dataset.kind = arg.kind;
        argBox.append(field(arg.label, input, arg.flag));
      }
    }
    drawArgs(chosenOp, true);
    opSelect.addEventListener("change", () => drawArgs(opSelect.value, false));

    // a model's inference
    const inferSet = element("fieldset", { class: "calc-infer" }, element("legend", {}, "模型与推理设置"));
    const q = (name, fallback) => (params.get(name) !== null ? params.get(name) : fallback);
    inferSet.append(
      field(
        "模型",
        select(
          "model",
          spec.models.map((m) => [m.key, m.name]),
          spec.models.some((m) => m.key === params.get("model")) ? params.get("model") : spec.defaults.model
        )
      ),
      field("batch", element("input", { type: "text", name: "batch", value: q("batch", ""), placeholder: "默认 1" }), "--batch"),
      field(
        "context（decode 一步每条序列要看的 token 数，含新 token）",
        element("input", { type: "text", name: "context", value: q("context", ""), placeholder: "默认 4096（模型的上下文更短时取它）" }),
        "--context"
      ),
      field(
        "prompt 长度",
        element("input", { type: "text", name: "prompt", value: q("prompt", ""), placeholder: "默认等于 context" }),
        "--prompt"
      ),
      field(
        "激活与计算的精度",
        element("input", { type: "text", name: "dtype", value: q("dtype", ""), placeholder: "默认 bf16", list: "calc-precisions" }),
        "--dtype"
      ),
      field(
        "权重的格式",
        element("input", {
          type: "text",
          name: "weights_dtype",
          value: q("weights_dtype", ""),
          placeholder: "默认 bf16",
          list: "calc-weight-formats",
        }),
        "--weights-dtype"
      ),
      field(
        "KV cache 的精度",
        element("input", { type: "text", name: "kv_dtype", value: q("kv_dtype", ""), placeholder: "默认 bf16", list: "calc-precisions" }),
        "--kv-dtype"
      ),
      field("张量并行（TP）的设备数", element("input", { type: "text", name: "tp", value: q("tp", ""), placeholder: "默认 1" }), "--tp"),
      field(
        "专家并行（EP）的设备数（大于 TP 时 attention 按 EP / TP 组数据并行）",
        element("input", { type: "text", name: "ep", value: q("ep", ""), placeholder: "默认 1" }),
        "--ep"
      ),
      field(
        "粘贴 config.json",
        element("textarea", {
          name: "config",
          rows: 6,
          spellcheck: "false",
          placeholder: "可选：粘贴 Hugging Face 模型的 config.json 全文，就按它计算，不用上面选的模型",
        }),
        "--model config.json"
      )
    );
    form.append(inferSet);

    // the device
    const deviceSet = element("fieldset", { class: "calc-device" }, element("legend", {}, "设备"));
    const custom = params.get("peak") !== null || params.get("bandwidth") !== null;
    const chosenDevice = spec.devices.some((d) => d.key === params.get("device"))
      ? params.get("device")
      : spec.defaults.device;
    const deviceSelect = select(
      "device",
      [...spec.devices.map((d) => [d.key, `${d.key}（${d.name}）`]), ["", "自定义：峰值与带宽"]],
      custom ? "" : chosenDevice
    );
    const peak = element("input", { type: "text", name: "peak", value: q("peak", "100T"), placeholder: "如 100T" });
    const bandwidth = element("input", {
      type: "text",
      name: "bandwidth",
      value: q("bandwidth", "1T"),
      placeholder: "如 3.35TB/s",
    });
    const adhoc = element(
      "div",
      { class: "calc-adhoc" },
      field("峰值（FLOP/s）", peak, "--peak"),
      field("HBM 带宽（B/s）", bandwidth, "--bandwidth")
    );
    deviceSet.append(field("目录中的设备", deviceSelect, "--device"), adhoc);
    form.append(deviceSet);

    const status = root.querySelector(".calc-status");
    const command = element("pre", { class: "calc-command" });
    const error = element("div", { class: "calc-error", role: "alert", hidden: true });
    const results = element("div", { class: "calc-results", "aria-live": "polite" });
    const figure = element("figure", { class: "calc-figure roofline-figure" });
    root.append(form, command, error, results, figure);

    /* The pasted config.json, or null: the command reads it as --model config.json. */
    function pasted() {
      const text = form.elements.config.value;
      return form.elements.mode.value === "infer" && text.trim() !== "" ? text : null;
    }

    function sync() {
      const infer = form.elements.mode.value === "infer";
      opSet.hidden = infer;
      inferSet.hidden = !infer;
      adhoc.hidden = deviceSelect.value !== "";
      form.elements.model.disabled = pasted() !== null;
    }

    function argv() {
      const args = [];
      if (form.elements.mode.value === "infer") {
        args.push("infer", "--model", pasted() === null ? form.elements.model.value : "config.json");
        for (const name of ["batch", "context", "prompt", "dtype", "weights_dtype", "kv_dtype", "tp", "ep"]) {
          const value = form.elements[name].value.trim();
          if (value !== "") {
            args.push(`--${name.replace("_", "-")}`, value);
          }
        }
      } else {
        const key = opSelect.value;
        args.push("op", key);
        for (const input of argBox.querySelectorAll("input")) {
          if (input.dataset.kind === "flag") {
            if (String(input.checked) !== input.dataset.default) {
              args.push(input.checked ? input.dataset.flag : `--no-${input.dataset.flag.slice(2)}`);
            }
          } else if (input.value.trim() !== "") {
            args.push(input.dataset.flag, input.value.trim());
          }
        }
      }
      if (deviceSelect.value === "") {
        args.push("--peak", peak.value.trim(), "--bandwidth", bandwidth.value.trim());
      } else {
        args.push("--device", deviceSelect.value);
      }
      return args;
    }

    let latest = 0;
    async function update() {
      sync();
      const args = argv();
      command.textContent = "roofline-book " + args.map(quote).join(" ");
      const config = pasted();
      const ticket = ++latest;
      const done = await run([...args, "--json"], config);
      if (ticket !== latest) return; // a newer change is on its way
      // a pasted config.json does not fit in the address: it then carries no command
      const address = config === null ? "?" + new URLSearchParams({ cmd: args.join(" ") }).toString() : "";
      window.history.replaceState(null, "", `${window.location.pathname}${address}`);
      if (done.code !== 0) {
        error.textContent = done.stderr.trim() || `命令以状态 ${done.code} 退出`;
        error.hidden = false;
        results.classList.add("calc-stale");
        figure.classList.add("calc-stale");
        root.dataset.state = "error";
        return;
      }
      const result = JSON.parse(done.stdout);
      error.hidden = true;
      results.classList.remove("calc-stale");
      figure.classList.remove("calc-stale");
      results.replaceChildren(...pythonJson("tables", result).map(table));
      figure.replaceChildren(
        roofline(result, pythonJson("points", result), pythonJson("roofs", result), spec)
      );
      root.dataset.state = "done";
      root.dataset.answers = String(Number(root.dataset.answers || 0) + 1);
    }

    /* The link's command, when its names are not the form's: true when the form may go on
       (the command ran, and the form now holds the names it answered with). */
    async function resolveLink() {
      if (linked === null) return true;
      const done = await run([...linked, "--json"]);
      if (done.code !== 0) {
        command.textContent = "roofline-book " + linked.map(quote).join(" ");
        error.textContent = done.stderr.trim() || `命令以状态 ${done.code} 退出`;
        error.hidden = false;
        root.dataset.state = "error";
        return false;
      }
      const result = JSON.parse(done.stdout);
      if (unmatched.includes("operator")) {
        opSelect.value = result.operator;
        drawArgs(result.operator, true);
      }
      if (unmatched.includes("model")) form.elements.model.value = result.model;
      if (unmatched.includes("device") && !result.device.adhoc) deviceSelect.value = result.device.key;
      return true;
    }

    function guarded() {
      return update().catch((failure) => {
        error.textContent = `计算器出错：${failure.message}`;
        error.hidden = false;
        root.dataset.state = "error";
      });
    }

    sync();
    form.addEventListener("input", guarded);
    form.addEventListener("change", guarded);
    ready.then(
      (manifest) => {
        status.textContent =
          `本页运行的是 roofline_book ${manifest.roofline_book} 本身（由 Pyodide ${manifest.pyodide} ` +
          `中的 Python ${manifest.python} 执行），与命令行 roofline-book 是同一份代码；计算都在这个浏览器里完成。`;
        status.classList.add("calc-ready");
        return resolveLink().then((ok) => (ok ? guarded() : undefined), (failure) => {
          error.textContent = `计算器出错：${failure.message}`;
          error.hidden = false;
          root.dataset.state = "error";
        });
      },
      (failure) => {
        status.textContent = `计算器没能启动：${failure.message}`;
        status.classList.add("calc-failed");
        root.dataset.state = "failed";
      }
    );
    onProgress = (text) => {
      status.textContent = text;
    };
  }

  function quote(arg) {
    return /^[\w.,:=+\-/]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`;
  }

  function table(data) {
    const node = element("table", { class: "calc-table" });
    node.append(element("caption", {}, data.title));
    const head = element("tr", {});
    for (const h of data.header) head.append(element("th", { scope: "col" }, h));
    node.append(element("thead", {}, head));
    const body = element("tbody", {});
    for (const row of data.rows) {
      const tr = element("tr", {});
      row.forEach((cell, i) => tr.append(element(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : {}, cell)));
      body.append(tr);
    }
    node.append(body);
    return node;
  }

  // ------------------------------------------------------------- the roofline
  const SUPERSCRIPT = { "-": "⁻", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹" };
  const power = (e) => "10" + String(e).replace(/./g, (c) => SUPERSCRIPT[c]);

  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function roofline(result, points, roofs, spec) {
    const { colors, axes, groups } = spec;
    const device = result.device;
    const W = 780,
      H = 440,
      left = 78,
      right = 210,
      top = 36,
      bottom = 52;
    // the roofs the package chose (cli.calculator.roofs): memory levels, then compute units
    const bands = roofs.filter((r) => r.kind === "memory");
    const peaks = roofs.filter((r) => r.kind === "compute");
    const hbm = device.bandwidths_Bps.hbm || Math.min(...bands.map((r) => r.rate));
    const top_peak = Math.max(...peaks.map((r) => r.rate));
    const ridges = peaks.map((r) => r.rate / hbm);
    const xs = [...points.map((p) => p.intensity), ...ridges];
    const x0 = Math.floor(Math.log10(Math.min(...xs)) - 1);
    const x1 = Math.ceil(Math.log10(Math.max(...xs)) + 1);
    const ys = [...points.map((p) => p.rate), hbm * 10 ** x0, ...peaks.map((r) => r.rate)];
    const y0 = Math.floor(Math.log10(Math.min(...ys.filter((y) => y > 0))) - 0.5);
    const y1 = Math.ceil(Math.log10(top_peak) + 0.3);
    const X = (v) => left + ((Math.log10(v) - x0) / (x1 - x0)) * (W - left - right);
    const Y = (v) => top + ((y1 - Math.log10(v)) / (y1 - y0)) * (H - top - bottom);

    const root = svg("svg", {
      viewBox: `0 0 ${W} ${H}`,
      width: W,
      height: H,
      role: "img",
      "aria-label": `${device.name} 的 roofline`,
      class: "calc-roofline",
    });
    root.append(svg("rect", { x: 0, y: 0, width: W, height: H, fill: "white" }));
    const title = device.adhoc ? "自定义设备" : device.name;
    root.append(
      svg(
        "text",
        { x: left, y: 22, "font-size": 15, fill: "#000" },
        `${title} 的 roofline（${device.precision.toUpperCase()}）`
      )
    );
    // grid and ticks at powers of ten
    for (let e = x0; e <= x1; e++) {
      const x = X(10 ** e);
      root.append(svg("line", { x1: x, x2: x, y1: top, y2: H - bottom, stroke: "#e5e5e5" }));
      root.append(
        svg("text", { x, y: H - bottom + 18, "text-anchor": "middle", "font-size": 12, fill: "#000" }, power(e))
      );
    }
    for (let e = y0; e <= y1; e++) {
      const y = Y(10 ** e);
      root.append(svg("line", { x1: left, x2: W - right, y1: y, y2: y, stroke: "#e5e5e5" }));
      root.append(
        svg("text", { x: left - 8, y: y + 4, "text-anchor": "end", "font-size": 12, fill: "#000" }, power(e))
      );
    }
    root.append(
      svg("rect", { x: left, y: top, width: W - left - right, height: H - top - bottom, fill: "none", stroke: "#000" })
    );
    root.append(
      svg("text", { x: (left + W - right) / 2, y: H - 12, "text-anchor": "middle", "font-size": 13, fill: "#000" }, axes.x)
    );
    const yLabel = svg(
      "text",
      { x: 0, y: 0, "text-anchor": "middle", "font-size": 13, fill: "#000", transform: `translate(20 ${(top + H - bottom) / 2}) rotate(-90)` },
      axes.y
    );
    root.append(yLabel);

    const xmin = 10 ** x0,
      xmax = 10 ** x1;
    const clip = `calc-clip-${Math.random().toString(36).slice(2)}`;
    const defs = svg("defs", {});
    const clipPath = svg("clipPath", { id: clip });
    clipPath.append(svg("rect", { x: left, y: top, width: W - left - right, height: H - top - bottom }));
    defs.append(clipPath);
    root.append(defs);
    const plot = svg("g", { "clip-path": `url(#${clip})` });
    root.append(plot);

    let labelY = top + 12;
    const legend = (color, text, dashed, marker) => {
      const x = W - right + 12;
      if (marker) {
        root.append(svg("circle", { cx: x + 10, cy: labelY - 4, r: 5, fill: color, stroke: "#000", "stroke-width": 0.6 }));
      } else {
        root.append(
          svg("line", { x1: x, x2: x + 20, y1: labelY - 4, y2: labelY - 4, stroke: color, "stroke-width": 2, "stroke-dasharray": dashed ? "5 3" : "none" })
        );
      }
      root.append(svg("text", { x: x + 26, y: labelY, "font-size": 12, fill: "#000" }, text));
      labelY += 20;
    };

    // memory roofs: bandwidth x intensity, up to the highest peak
    for (const { name, rate: band, label } of bands) {
      const color = colors[name] || "#000";
      const end = Math.min(xmax, top_peak / band);
      plot.append(
        svg("line", {
          x1: X(xmin),
          y1: Y(band * xmin),
          x2: X(end),
          y2: Y(band * end),
          stroke: color,
          "stroke-width": name === "hbm" ? 2 : 1.5,
          "stroke-dasharray": name === "hbm" ? "none" : "5 3",
        })
      );
      legend(color, label, name !== "hbm");
    }
    // compute roofs: each unit's peak, from the HBM ridge on
    for (const { name, rate: peakRate, label } of peaks) {
      const color = colors[name] || "#000";
      const start = Math.max(xmin, peakRate / hbm);
      plot.append(
        svg("line", { x1: X(start), y1: Y(peakRate), x2: X(xmax), y2: Y(peakRate), stroke: color, "stroke-width": 2 })
      );
      legend(color, label, false);
    }
    const seen = new Set();
    for (const point of points) {
      const [color] = groups[point.group];
      const dot = svg("circle", {
        cx: X(point.intensity),
        cy: Y(point.rate),
        r: 5,
        fill: color,
        stroke: "#000",
        "stroke-width": 0.6,
        class: "calc-point",
        "data-group": point.group,
        "data-intensity": point.intensity,
        "data-rate": point.rate,
      });
      dot.append(svg("title", {}, point.text));
      plot.append(dot);
      seen.add(point.group);
    }
    for (const group of seen) legend(groups[group][0], groups[group][1], false, true);
    return root;
  }

  function start() {
    const root = document.getElementById("roofline-calculator");
    const data = document.getElementById("roofline-calculator-spec");
    if (!root || !data) return;
    build(root, JSON.parse(data.textContent));
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
