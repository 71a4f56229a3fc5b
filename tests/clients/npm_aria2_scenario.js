// Drives a daemon (ringdl or aria2c) with the npm `aria2` package: calls over HTTP first (its
// "json-rpc" envelope, numeric ids from 0), then over the WebSocket it opens, listening to the
// notifications; addMetalink, and a Metalink an addUri download follows; multicall and batch; pause, unpause, changeOption, remove, shutdown. Any mismatch
// exits non-zero with the reason; the last line is a JSON report for the Rust test.
//
// Usage: node npm_aria2_scenario.js PORT SECRET BASE_URL [secure]   (NODE_PATH has the aria2
// package; with `secure`, https and wss, the certificate trusted through NODE_EXTRA_CA_CERTS)
"use strict";
const Aria2 = require("aria2");

const [port, secret, base, mode] = process.argv.slice(2);
const secure = mode === "secure";
const aria2 = new Aria2({ host: "localhost", port: Number(port), secure, secret, path: "/jsonrpc" });
if (secure) {
  // The package registers a call's promise only once the WebSocket's write callback has fired; over
  // TLS the answer can arrive first, is dropped, and the call never resolves (aria2c hangs the same
  // way). Resolving the send at once registers the promise before any answer can be read.
  aria2.websocket = function (message) {
    this.socket.send(JSON.stringify(message));
    return Promise.resolve();
  };
}
const events = [];
for (const name of ["onDownloadStart", "onDownloadPause", "onDownloadStop", "onDownloadComplete", "onDownloadError"]) {
  aria2.on(name, ([e]) => events.push([name, e.gid]));
}

function check(cond, what) {
  if (!cond) {
    console.error("check failed: " + what);
    process.exit(1);
  }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(pred, what, limit = 30000) {
  const start = Date.now();
  while (Date.now() - start < limit) {
    if (await pred()) return;
    await sleep(50);
  }
  check(false, "timed out waiting for " + what);
}
const status = async (gid) => (await aria2.call("tellStatus", gid, ["status", "completedLength", "totalLength"]));

(async () => {
  // Over HTTP (no socket open yet).
  const version = await aria2.call("getVersion");
  check(typeof version.version === "string", "getVersion " + JSON.stringify(version));
  const methods = await aria2.listMethods();
  check(methods.includes("addUri") && methods.length === 36, "listMethods " + methods.length);
  const viaHttp = await aria2.call("addUri", [base + "/small.bin"], { out: "http.bin" });
  await until(async () => (await status(viaHttp)).status === "complete", "the HTTP download");
  // A Metalink, base64 as aria2 takes it: a GID per file.
  const doc = '<?xml version="1.0"?><metalink xmlns="urn:ietf:params:xml:ns:metalink">' +
    '<file name="meta.bin"><url>' + base + '/small.bin</url></file></metalink>';
  const metaGids = await aria2.call("addMetalink", Buffer.from(doc).toString("base64"));
  check(Array.isArray(metaGids) && metaGids.length === 1, "addMetalink " + JSON.stringify(metaGids));
  await until(async () => (await status(metaGids[0])).status === "complete", "the Metalink's download");
  // A Metalink fetched by addUri is followed: its file's download is `following` it.
  const parent = await aria2.call("addUri", [base + "/follow.meta4"]);
  let children = [];
  await until(async () => {
    const s = await aria2.call("tellStatus", parent, ["status", "followedBy"]);
    children = s.followedBy || [];
    return s.status === "complete" && children.length === 1;
  }, "the followed Metalink");
  await until(async () => (await status(children[0])).status === "complete", "its file");
  const child = await aria2.call("tellStatus", children[0], ["following"]);
  check(child.following === parent, "following " + JSON.stringify(child));

  // Over the WebSocket from here on.
  await aria2.open();
  const big = await aria2.call("addUri", [base + "/big.bin"]);
  await until(async () => {
    const s = await status(big);
    return s.status === "active" && Number(s.completedLength) > 1 << 20;
  }, "the big download to run");
  check((await aria2.call("pause", big)) === big, "pause");
  await until(async () => (await status(big)).status === "paused", "the pause");
  const opts = await aria2.call("getOption", big);
  check(opts["max-download-limit"] === "0", "getOption " + JSON.stringify(opts));
  check((await aria2.call("changeOption", big, { "max-download-limit": "4M" })) === "OK", "changeOption");

  // multicall and batch, as front-ends send them.
  const multi = await aria2.multicall([
    ["tellStatus", big, ["status"]],
    ["getGlobalStat"],
    ["tellStatus", "nonsense"],
  ]);
  check(multi[0][0].status === "paused", "multicall status " + JSON.stringify(multi));
  check(multi[1][0].numWaiting === "1", "multicall stat " + JSON.stringify(multi));
  check(multi[2].code === 1, "multicall error " + JSON.stringify(multi));
  const batch = await Promise.all(await aria2.batch([["getGlobalStat"], ["tellWaiting", 0, 10, ["gid"]]]));
  check(batch[1].length === 1 && batch[1][0].gid === big, "batch " + JSON.stringify(batch));

  const viaWs = await aria2.call("addUri", [base + "/small.bin"], { out: "ws.bin", pause: "true" });
  check((await aria2.call("unpause", big)) === big, "unpause");
  check((await aria2.call("changeOption", big, { "max-download-limit": "0" })) === "OK", "changeOption back");
  await until(async () => (await status(big)).status === "complete", "the big download", 60000);
  check((await aria2.call("unpause", viaWs)) === viaWs, "unpause the paused one");
  await until(async () => (await status(viaWs)).status === "complete", "the WebSocket download");

  // Remove a paused download; a stopped result goes with removeDownloadResult.
  const gone = await aria2.call("addUri", [base + "/small.bin"], { out: "never.bin", pause: "true" });
  check((await aria2.call("forceRemove", gone)) === gone, "forceRemove");
  check((await aria2.call("removeDownloadResult", viaHttp)) === "OK", "removeDownloadResult");
  // (The followed Metalink and its file are two of them.)
  const stopped = await aria2.call("tellStopped", 0, 100, ["gid"]);
  check(stopped.length === 5, "tellStopped " + JSON.stringify(stopped));
  await sleep(500);
  console.log(JSON.stringify({ big, viaHttp, viaWs, events, version: version.version }));
  await aria2.call("shutdown");
  await aria2.close();
  process.exit(0);
})().catch((e) => {
  console.error("failed: " + (e && e.stack ? e.stack : JSON.stringify(e)));
  process.exit(1);
});
