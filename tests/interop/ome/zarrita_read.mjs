// Read levels of an OME-Zarr 0.5 image with zarrita.js (the JavaScript peer) and print JSON:
//   node zarrita_read.mjs NODE_MODULES STORE_DIR LEVEL...
// prints {"attributes": <the group's attributes>, "levels": {LEVEL: {shape, chunks, dtype, data}}}
// with data flattened in C order (64-bit integers as decimal strings).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, storeDir, ...levels] = process.argv.slice(2);

// Import a package's export from NODE_MODULES (the tests' own folder has no node_modules).
async function load(pkg, sub = ".") {
  const dir = join(nodeModules, pkg);
  const meta = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const entry = meta.exports?.[sub]?.import ?? meta.main;
  return import(pathToFileURL(join(dir, entry)).href);
}

const zarr = await load("zarrita");
const FileSystemStore = (await load("@zarrita/storage", "./fs")).default;

const root = zarr.root(new FileSystemStore(storeDir));
const group = await zarr.open(root, { kind: "group" });
const out = { attributes: group.attrs, levels: {} };
for (const level of levels) {
  const array = await zarr.open(root.resolve(level), { kind: "array" });
  const chunk = await zarr.get(array);
  out.levels[level] = {
    shape: chunk.shape,
    chunks: array.chunks,
    dtype: array.dtype,
    data: Array.from(chunk.data, (v) => (typeof v === "bigint" ? v.toString() : v)),
  };
}
process.stdout.write(JSON.stringify(out));
