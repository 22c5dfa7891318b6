// The frontend's lint (`npm run lint`, run by .ci/run): typescript-eslint's recommended rules and the
// two rules of React hooks (Preact's hooks follow them): hooks called unconditionally, in the same order
// on every render, and effects, memos and callbacks that name everything they read. A dependency left out
// on purpose says why, next to the array, in an eslint-disable-next-line comment.
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["src/gen/**", "node_modules/**", "dev/**"] },
  ...tseslint.configs.recommended,
  {
    files: ["src/**/*.{ts,tsx}"],
    plugins: { "react-hooks": reactHooks },
    rules: {
      "react-hooks/rules-of-hooks": "error",
      "react-hooks/exhaustive-deps": "error",
    },
  },
);
