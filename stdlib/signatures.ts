// Parameters of every builtin, read by the implementations (argument binding) and by the interpreter's
// suspension analysis (which arguments are functions), so the two cannot disagree.
import type { StdlibName } from "./names.ts";

interface Signature {
  params: string[];
  /** the parameters that take functions: the call can only suspend through them */
  fnParams: number[];
}

// Keyed by the validator's name list, so the two cannot disagree.
export const SIGNATURES: Record<StdlibName, Signature> = {
  pack: { params: [], fnParams: [] },
  perm: { params: ["read", "write", "execute", "bash", "network"], fnParams: [] },
  range: { params: ["n"], fnParams: [] },
  len: { params: ["x"], fnParams: [] },
  map: { params: ["items", "f"], fnParams: [1] },
  pmap: { params: ["items", "f"], fnParams: [1] },
  filter: { params: ["items", "pred"], fnParams: [1] },
  reduce: { params: ["items", "f", "init"], fnParams: [1] },
  refine: { params: ["seed", "max", "done", "step"], fnParams: [2, 3] },
  json: { params: ["text"], fnParams: [] },
};
