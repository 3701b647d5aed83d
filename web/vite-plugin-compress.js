// Writes `.br` and `.gz` siblings of the built text assets, which the server sends to browsers that
// accept them (webapi/asset_encoding.py). Brotli at quality 11 takes over a second for the app's
// JavaScript: fine once per build, too slow per request. Node's own zlib, so no dependency.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const TEXT = /\.(js|mjs|css|html|svg|json|txt)$/;

export default function compressAssets() {
  return {
    name: "librarian-compress-assets",
    apply: "build",
    writeBundle(options, bundle) {
      for (const fileName of Object.keys(bundle)) {
        if (!TEXT.test(fileName) || !fileName.startsWith("assets/")) continue;
        const file = join(options.dir, fileName);
        const raw = readFileSync(file);
        writeFileSync(`${file}.br`, brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
        writeFileSync(`${file}.gz`, gzipSync(raw, { level: 9 }));
      }
    },
  };
}
