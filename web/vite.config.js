// Built assets go to dist/ and are committed, so serving the app needs no npm (see README "Web app").
import { defineConfig } from "vite";
import compressAssets from "./vite-plugin-compress.js";

export default defineConfig({
  base: "/",
  plugins: [compressAssets()], // .br/.gz siblings of the assets, served by webapi/asset_encoding.py
  build: {
    outDir: "dist",
    assetsDir: "assets",
    emptyOutDir: true,
    modulePreload: { polyfill: false }, // no inline script: the server's CSP allows only 'self'
    sourcemap: false,
  },
  server: {
    // `npm run dev` proxies the API to a local `langgraph dev` (LIBRARIAN_API, default port 8123).
    proxy: Object.fromEntries(
      ["/orgs", "/threads", "/runs", "/assistants", "/info"].map((p) => [
        p,
        process.env.LIBRARIAN_API ?? "http://127.0.0.1:8123",
      ]),
    ),
  },
});
