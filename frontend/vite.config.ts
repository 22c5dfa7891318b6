// Builds the panels into the Python package: one ES module (index.js) and its stylesheet (index.css).
// TensorBoard imports `index.js` inside the plugin's iframe and calls its exported `render()`.
// An app build (not library mode) so that the module is fully minified; the entry keeps its exports.
import { resolve } from "node:path";
import { defineConfig } from "vite";

export default defineConfig({
  // Relative URLs: the files are served under /data/plugin/paddle_profile/ (below any --path_prefix).
  base: "./",
  esbuild: { jsx: "automatic", jsxImportSource: "preact", legalComments: "none" },
  build: {
    outDir: process.env.TBPP_OUT_DIR || resolve(__dirname, "../tb_paddle_profile/static"),
    emptyOutDir: true,
    target: "es2020",
    minify: "esbuild",
    sourcemap: false,
    modulePreload: false,
    reportCompressedSize: false,
    copyPublicDir: false,
    chunkSizeWarningLimit: 1024,
    rollupOptions: {
      input: resolve(__dirname, "src/index.tsx"),
      preserveEntrySignatures: "strict",
      output: {
        format: "es",
        entryFileNames: "index.js",
        assetFileNames: "index[extname]",
        inlineDynamicImports: true,
      },
    },
  },
});
