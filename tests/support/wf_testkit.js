// The Node suites' shared kit (as wf_testkit.py is the Python suites'):
// free ports claimed for the run, the sanitizers' environment for the
// servers they start, and the time scale of their wall-clock bounds.
"use strict";
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");

// The sanitizers' options of the caller (test.sh's sanitizer pass) reach
// the servers; nothing else of its environment does.
function sanitizerEnv() {
  const e = {};
  for (const [k, v] of Object.entries(process.env))
    if (/^(ASAN|UBSAN|LSAN)_OPTIONS$/.test(k)) e[k] = v;
  return e;
}

function kernelPort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); });
    s.on("error", reject);
  });
}

// A port nobody listens on now (the kernel's pick), never 50051, and with
// WF_TEST_PORT_DIR claimed there for the run as wf_testkit.py free_port
// does: suites running at once never pick the same one.
async function freePort() {
  const claims = process.env.WF_TEST_PORT_DIR;
  for (let i = 0; i < 1000; i++) {
    const p = await kernelPort();
    if (p === 50051) continue;
    if (claims) {
      try { fs.closeSync(fs.openSync(path.join(claims, String(p)), "wx")); } catch (e) {
        if (e.code === "EEXIST") continue;
        throw e;
      }
    }
    return p;
  }
  throw new Error("no free port found");
}

// How many times slower than a quiet machine this run may be (as
// wf_testkit.py time_scale): 5 when binary is built with AddressSanitizer,
// times the load average per CPU above one, times WF_TEST_TIME_SCALE; at
// most 40.
function timeScale(binary) {
  let scale = Math.max(1, os.loadavg()[0] / (os.cpus().length || 1));
  if (binary && fs.readFileSync(binary).includes("__asan_init")) scale *= 5;
  const user = Number(process.env.WF_TEST_TIME_SCALE || "1");
  if (user > 1) scale *= user;
  return Math.min(40, Math.ceil(scale));
}

module.exports = { sanitizerEnv, freePort, timeScale };
