// A scripted loss of calls (scenarios' drop lines): the cluster holds the rules, the RPC router applies them.
/** DropRule: a script loses `remaining` (-1 = all) calls of `method` from `from` to `to` ('*' = any), after letting `skip` through. */
export interface DropRule {
  from: string;
  to: string;
  method: string;
  remaining: number;
  skip: number;
}
