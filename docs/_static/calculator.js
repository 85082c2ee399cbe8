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
   Chinese tables (roofline_book.cli.calculator.tables) and a roofline of the device; for
   `serve`, the Pareto curve and the first steps' timeline instead, from the numbers
   roofline_book.cli.calculator.serve_figures simulates for the same command line. */
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

  /* roofline_book.cli.calculator.serve_figures(argv, config): plain numbers (None -> undefined). */
  function serveFigures(argv, config) {
    const args = pyodide.toPy(argv);
    try {
      return toJs(typeof config === "string" ? calculator.serve_figures(args, config) : calculator.serve_figures(args));
    } finally {
      args.destroy();
    }
  }

  window.rooflineBook = { ready, run };

  const MODES = ["op", "infer", "serve"];

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
    if (!MODES.includes(words[0])) return given;
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
    return MODES.includes(words[0]) ? words : null;
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
    if (["infer", "serve"].includes(params.get("mode")) && params.get("model") !== null &&
        !spec.models.some((m) => m.key === params.get("model"))) unmatched.push("model");
    if (params.get("device") !== null && !spec.devices.some((d) => d.key === params.get("device")))
      unmatched.push("device");
    const linked = unmatched.length ? linkedArgv(query) : null;
    const form = element("form", { class: "calc-form", autocomplete: "off" });
    form.addEventListener("submit", (event) => event.preventDefault());
    form.append(datalist("calc-precisions", spec.precisions));
    form.append(datalist("calc-weight-formats", spec.weight_formats));

    const mode = MODES.includes(params.get("mode")) ? params.get("mode") : "op";
    const modes = element("fieldset", { class: "calc-modes" }, element("legend", {}, "计算对象"));
    for (const [value, text] of [
      ["op", "一个算子"],
      ["infer", "一个模型的推理"],
      ["serve", "一个模型的服务（一串请求）"],
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

    // the model, for its inference and for serving it
    const modelSet = element("fieldset", { class: "calc-model" }, element("legend", {}, "模型"));
    modelSet.append(
      field(
        "模型",
        select(
          "model",
          spec.models.map((m) => [m.key, m.name]),
          spec.models.some((m) => m.key === params.get("model")) ? params.get("model") : spec.defaults.model
        )
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
    form.append(modelSet);

    // a model's inference
    const inferSet = element("fieldset", { class: "calc-infer" }, element("legend", {}, "推理设置"));
    // a value from the link; `own`: only when the link is that command (serve and infer share
    // some flag names)
    const q = (name, fallback, own = null) =>
      params.get(name) !== null && (own === null || params.get("mode") === own) ? params.get(name) : fallback;
    inferSet.append(
      field("batch", element("input", { type: "text", name: "batch", value: q("batch", ""), placeholder: "默认 1" }), "--batch"),
      field(
        "context（decode 一步每条序列要看的 token 数，含新 token）",
        element("input", { type: "text", name: "context", value: q("context", ""), placeholder: "默认 4096（模型的上下文更短时取它）" }),
        "--context"
      ),
      field(
        "prompt 长度",
        element("input", { type: "text", name: "prompt", value: q("prompt", "", "infer"), placeholder: "默认等于 context" }),
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
      field("张量并行（TP）的设备数", element("input", { type: "text", name: "tp", value: q("tp", "", "infer"), placeholder: "默认 1" }), "--tp"),
      field(
        "专家并行（EP）的设备数（大于 TP 时 attention 按 EP / TP 组数据并行）",
        element("input", { type: "text", name: "ep", value: q("ep", ""), placeholder: "默认 1" }),
        "--ep"
      )
    );
    form.append(inferSet);

    // serving the model: a stream of requests (the serve command's flags)
    const serveSet = element("fieldset", { class: "calc-serve" }, element("legend", {}, "服务设置：请求、调度与 SLO"));
    const serveInputs = [];
    for (const [name, label, fallback, placeholder] of [
      ["rate", "到达率（每秒请求数，或 inf：全部一起到达）", "20", "必填，如 20 或 inf"],
      ["requests", "请求数", "", "默认 1000"],
      ["prompt", "prompt 长度（token）", "", "默认 1000"],
      ["output", "输出长度（token）", "", "默认 200"],
      ["scheduler", "调度", null, null],
      ["chunk", "chunked prefill 每步的 token 预算", "", "默认 2048"],
      ["replicas", "副本数（分离部署至少 2）", "", "默认 1"],
      ["tp", "每个副本的张量并行（TP）设备数", "", "默认 1"],
      ["slo_ttft", "TTFT 的 SLO（秒）", "0.2", "可省略"],
      ["slo_tpot", "TPOT 的 SLO（秒）", "0.05", "可省略"],
    ]) {
      const flag = `--${name.replace("_", "-")}`;
      // a serve link carries its own flags: no other value is added to its command
      const given = q(name, params.get("mode") === "serve" ? "" : fallback, "serve");
      const input =
        name === "scheduler"
          ? select(
              "serve_scheduler",
              spec.schedulers.map((k) => [k, k]),
              spec.schedulers.includes(given) ? given : "chunked"
            )
          : element("input", { type: "text", name: `serve_${name}`, value: given, placeholder, spellcheck: "false" });
      input.dataset.flag = flag;
      serveInputs.push(input);
      serveSet.append(field(label, input, flag));
    }
    form.append(serveSet);

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
    const serveFigure = element("div", { class: "calc-serve-figures roofline-figure", "aria-live": "polite" });
    root.append(form, command, error, results, figure, serveFigure);

    /* The pasted config.json, or null: the command reads it as --model config.json. */
    function pasted() {
      const text = form.elements.config.value;
      return form.elements.mode.value !== "op" && text.trim() !== "" ? text : null;
    }

    function sync() {
      const chosen = form.elements.mode.value;
      opSet.hidden = chosen !== "op";
      modelSet.hidden = chosen === "op";
      inferSet.hidden = chosen !== "infer";
      serveSet.hidden = chosen !== "serve";
      figure.hidden = chosen === "serve";
      serveFigure.hidden = chosen !== "serve";
      adhoc.hidden = deviceSelect.value !== "";
      form.elements.model.disabled = pasted() !== null;
    }

    function argv() {
      const args = [];
      if (form.elements.mode.value === "serve") {
        args.push("serve", "--model", pasted() === null ? form.elements.model.value : "config.json");
        for (const input of serveInputs) {
          const value = input.value.trim();
          // the scheduler the command takes by default is not spelled out
          if (value !== "" && !(input.dataset.flag === "--scheduler" && value === "chunked")) {
            args.push(input.dataset.flag, value);
          }
        }
      } else if (form.elements.mode.value === "infer") {
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
        serveFigure.classList.add("calc-stale");
        root.dataset.state = "error";
        return;
      }
      const result = JSON.parse(done.stdout);
      error.hidden = true;
      results.classList.remove("calc-stale");
      figure.classList.remove("calc-stale");
      results.replaceChildren(...pythonJson("tables", result).map(table));
      if (result.command !== "serve") {
        figure.replaceChildren(
          roofline(result, pythonJson("points", result), pythonJson("roofs", result), spec)
        );
      } else {
        serveFigure.classList.add("calc-stale");
      }
      root.dataset.state = "done";
      root.dataset.answers = String(Number(root.dataset.answers || 0) + 1);
      if (result.command === "serve") {
        // the curve simulates several rates: let the tables show first, and wait for the
        // typing to pause
        await new Promise((resolve) => setTimeout(resolve, 300));
        if (ticket !== latest) return;
        const data = serveFigures(args, config);
        if (ticket !== latest) return;
        serveFigure.replaceChildren(pareto(result, data, spec), timeline(data, spec));
        serveFigure.classList.remove("calc-stale");
        root.dataset.figures = String(Number(root.dataset.figures || 0) + 1);
      }
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
      // a cell of words (serve's settings, its goodput) wraps; a number stays on one line
      row.forEach((cell, i) =>
        tr.append(element(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : { class: cell.length > 24 ? "calc-words" : null }, cell))
      );
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

  // ------------------------------------------------------- serving: the figures
  const fmtTime = (s) => (s >= 1 ? `${+s.toPrecision(3)} s` : `${+(s * 1e3).toPrecision(3)} ms`);

  function frame(W, H, label) {
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": label });
    root.append(svg("title", {}, label));
    root.append(svg("rect", { x: 0, y: 0, width: W, height: H, fill: "white" }));
    return root;
  }

  /* Throughput (x) against p90 TTFT and TPOT (y, log), one point per rate of the sweep, the
     SLOs as dashed lines, and this command's own run ringed. */
  function pareto(result, data, spec) {
    const points = data.pareto;
    const lower = data.kind === "bound";
    const W = 780,
      H = 420,
      left = 78,
      right = 200,
      top = 40,
      bottom = 56;
    const run = result.run || result;
    const lines = Object.entries(spec.serve_lines); // [["ttft", [color, label]], ...]
    const value = (p, key) => p[`${key}_p90_s`];
    const own = { requests_per_s: run.requests_per_s, ttft_p90_s: run.ttft_s.p90, tpot_p90_s: run.tpot_s ? run.tpot_s.p90 : undefined };
    const slos = { ttft: result.slo_ttft_s, tpot: result.slo_tpot_s };
    const ys = [];
    for (const p of [...points, own]) for (const [key] of lines) if (value(p, key) > 0) ys.push(value(p, key));
    for (const v of Object.values(slos)) if (v) ys.push(v);
    const y0 = Math.floor(Math.log10(Math.min(...ys)) - 0.2);
    const y1 = Math.ceil(Math.log10(Math.max(...ys)) + 0.2);
    const xmax = 1.1 * Math.max(...points.map((p) => p.requests_per_s), own.requests_per_s);
    const X = (v) => left + (v / xmax) * (W - left - right);
    const Y = (v) => top + ((y1 - Math.log10(v)) / (y1 - y0)) * (H - top - bottom);
    const bound = lower ? "上界" : "估计";
    const latency = lower ? "下界" : "估计";
    const root = frame(W, H, `吞吐与 p90 延迟：${points.length} 个到达率`);
    root.classList.add("calc-pareto");
    root.append(
      svg("text", { x: left, y: 18, "font-size": 15, fill: "#000" }, `吞吐与 p90 延迟（到达率从饱和吞吐的 10% 到 100%）`),
      svg("text", { x: left, y: 34, "font-size": 12, fill: "#444" }, `每个到达率模拟 ${data.curve_requests.toLocaleString("en-US")} 个请求；延迟是${latency}，吞吐是${bound}`)
    );
    // grid: x linear, y at 1, 2, 5 x powers of ten
    const step = 10 ** Math.floor(Math.log10(xmax / 2));
    const xstep = xmax / step > 10 ? step * (xmax / step > 25 ? 5 : 2) : step;
    for (let v = 0; v <= xmax; v += xstep) {
      const x = X(v);
      root.append(svg("line", { x1: x, x2: x, y1: top, y2: H - bottom, stroke: "#e5e5e5" }));
      root.append(svg("text", { x, y: H - bottom + 18, "text-anchor": "middle", "font-size": 12, fill: "#000" }, String(+v.toPrecision(4))));
    }
    for (let e = y0; e <= y1; e++) {
      for (const m of e < y1 ? [1, 2, 5] : [1]) {
        const y = Y(m * 10 ** e);
        root.append(svg("line", { x1: left, x2: W - right, y1: y, y2: y, stroke: m === 1 ? "#d0d0d0" : "#eeeeee" }));
        if (m === 1 || y1 - y0 <= 2) {
          root.append(svg("text", { x: left - 8, y: y + 4, "text-anchor": "end", "font-size": 12, fill: "#000" }, fmtTime(m * 10 ** e)));
        }
      }
    }
    root.append(svg("rect", { x: left, y: top, width: W - left - right, height: H - top - bottom, fill: "none", stroke: "#000" }));
    root.append(
      svg("text", { x: (left + W - right) / 2, y: H - 14, "text-anchor": "middle", "font-size": 13, fill: "#000" }, `吞吐（requests/s，${bound}）`),
      svg("text", { x: 0, y: 0, "text-anchor": "middle", "font-size": 13, fill: "#000", transform: `translate(18 ${(top + H - bottom) / 2}) rotate(-90)` }, `p90 延迟（${latency}，对数轴）`)
    );
    let labelY = top + 12;
    const legend = (color, text, kind) => {
      const x = W - right + 12;
      if (kind === "ring") root.append(svg("circle", { cx: x + 10, cy: labelY - 4, r: 6, fill: "none", stroke: "#000", "stroke-width": 1.5 }));
      else root.append(svg("line", { x1: x, x2: x + 20, y1: labelY - 4, y2: labelY - 4, stroke: color, "stroke-width": 2, "stroke-dasharray": kind === "dashed" ? "5 3" : "none" }));
      root.append(svg("text", { x: x + 26, y: labelY, "font-size": 12, fill: "#000" }, text));
      labelY += 20;
    };
    for (const [key, [color, label]] of lines) {
      const placed = points.filter((p) => value(p, key) > 0);
      if (!placed.length) continue;
      root.append(
        svg("polyline", {
          points: placed.map((p) => `${X(p.requests_per_s)},${Y(value(p, key))}`).join(" "),
          fill: "none",
          stroke: color,
          "stroke-width": 2,
        })
      );
      for (const p of placed) {
        const dot = svg("circle", {
          cx: X(p.requests_per_s),
          cy: Y(value(p, key)),
          r: 3.5,
          fill: color,
          class: "calc-pareto-point",
          "data-line": key,
          "data-rate": p.rate_per_s,
          "data-throughput": p.requests_per_s,
          "data-latency": value(p, key),
        });
        dot.append(svg("title", {}, `到达率 ${p.rate_per_s.toFixed(2)}/s：吞吐 ${p.requests_per_s.toFixed(2)} requests/s，${label} ${fmtTime(value(p, key))}`));
        root.append(dot);
      }
      legend(color, label);
      if (slos[key]) {
        root.append(svg("line", { x1: left, x2: W - right, y1: Y(slos[key]), y2: Y(slos[key]), stroke: color, "stroke-width": 1.5, "stroke-dasharray": "5 3" }));
        legend(color, `${key.toUpperCase()} 的 SLO ${fmtTime(slos[key])}`, "dashed");
      }
    }
    // this command's own run
    for (const [key] of lines) {
      if (!(value(own, key) > 0)) continue;
      const ring = svg("circle", { cx: X(own.requests_per_s), cy: Y(value(own, key)), r: 7, fill: "none", stroke: "#000", "stroke-width": 1.5, class: "calc-pareto-own", "data-line": key });
      ring.append(svg("title", {}, `本次的命令：吞吐 ${own.requests_per_s.toFixed(2)} requests/s，p90 ${key.toUpperCase()} ${fmtTime(value(own, key))}`));
      root.append(ring);
    }
    legend("#000", "本次的命令", "ring");
    return root;
  }

  /* The first steps: one row a request, one bar a step it is in (prefill or decode). */
  function timeline(data, spec) {
    const steps = data.timeline;
    if (!steps.length) return element("p", { class: "calc-note" }, "没有给到达率（--rate），不画时间线。");
    const rows = [...new Set(steps.flatMap((s) => s.items.map((i) => i[0])))].sort((a, b) => a - b);
    const engines = new Set(steps.map((s) => s.engine)).size;
    const W = 780,
      rowH = 18,
      left = 78,
      right = 200,
      top = 44,
      bottom = 48;
    const H = top + bottom + rows.length * rowH;
    const t0 = steps[0].start;
    const t1 = Math.max(...steps.map((s) => s.end));
    const X = (t) => left + ((t - t0) / (t1 - t0)) * (W - left - right);
    const root = frame(W, H, `前 ${steps.length} 步的时间线：${rows.length} 个请求`);
    root.classList.add("calc-timeline");
    const where = engines > 1 ? `，${engines} 个引擎` : "";
    const shown = data.timeline_others ? `最先到达的 ${rows.length} 个请求；同一步里其余的请求未画出` : `${rows.length} 个请求`;
    root.append(
      svg("text", { x: left, y: 18, "font-size": 15, fill: "#000" }, `前 ${steps.length} 步的时间线（${shown}${where}）`),
      svg("text", { x: left, y: 34, "font-size": 12, fill: "#444" }, "每一格是一步：请求在这一步 prefill 的 token 数写在格中，或 decode 一个 token；一行结束处就是请求离开")
    );
    // time ticks
    const span = t1 - t0;
    const unit = 10 ** Math.floor(Math.log10(span / 4));
    const tick = span / unit > 20 ? unit * 5 : span / unit > 8 ? unit * 2 : unit;
    for (let t = 0; t <= span; t += tick) {
      const x = X(t0 + t);
      root.append(svg("line", { x1: x, x2: x, y1: top, y2: H - bottom, stroke: "#e5e5e5" }));
      root.append(svg("text", { x, y: H - bottom + 18, "text-anchor": "middle", "font-size": 12, fill: "#000" }, t === 0 ? "0" : fmtTime(t)));
    }
    rows.forEach((r, i) => {
      root.append(svg("text", { x: left - 8, y: top + i * rowH + rowH - 5, "text-anchor": "end", "font-size": 12, fill: "#000" }, `请求 ${r}`));
    });
    const [prefillColor] = spec.groups.prefill;
    const [decodeColor] = spec.groups.decode;
    for (const step of steps) {
      const x = X(step.start);
      const w = Math.max(0.8, X(step.end) - x);
      for (const [index, kind, tokens] of step.items) {
        const y = top + rows.indexOf(index) * rowH + 2;
        const bar = svg("rect", {
          x,
          y,
          width: w,
          height: rowH - 4,
          fill: kind === "prefill" ? prefillColor : decodeColor,
          stroke: w > 3 ? "#000" : "none",
          "stroke-width": 0.3,
          class: "calc-step",
          "data-request": index,
          "data-kind": kind,
          "data-tokens": tokens,
          "data-start": step.start,
          "data-end": step.end,
        });
        bar.append(svg("title", {}, `请求 ${index}：${kind} ${tokens} 个 token，${fmtTime(step.start - t0)} 到 ${fmtTime(step.end - t0)}（${step.bound}-bound）`));
        root.append(bar);
        if (kind === "prefill" && w > 30) {
          root.append(svg("text", { x: x + w / 2, y: y + rowH - 8, "text-anchor": "middle", "font-size": 10, fill: "#000" }, String(tokens)));
        }
      }
    }
    root.append(svg("rect", { x: left, y: top, width: W - left - right, height: H - top - bottom, fill: "none", stroke: "#000" }));
    root.append(svg("text", { x: (left + W - right) / 2, y: H - 12, "text-anchor": "middle", "font-size": 13, fill: "#000" }, "时间（从第一步开始）"));
    let labelY = top + 12;
    for (const [color, text] of [
      [prefillColor, "prefill（格中为 token 数）"],
      [decodeColor, "decode 一个 token"],
    ]) {
      const x = W - right + 12;
      root.append(svg("rect", { x, y: labelY - 10, width: 20, height: 12, fill: color, stroke: "#000", "stroke-width": 0.3 }));
      root.append(svg("text", { x: x + 26, y: labelY, "font-size": 12, fill: "#000" }, text));
      labelY += 20;
    }
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
