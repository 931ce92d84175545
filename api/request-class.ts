// The request class a server hosting the API may give node:http (`createServer({IncomingMessage})`), so that the
// one field the API adds to each request (app.ts holdRequestFieldsTogether) is there from the constructor on.
import { IncomingMessage } from 'node:http';

/** requestFieldsSlot names the property holding the API's fields of a request (app.ts). */
export const requestFieldsSlot = Symbol('svc.requestFields');

/**
 * ApiIncomingMessage declares the API's slot in its constructor: V8 then keeps it inside the object, where a
 * property added after the constructor goes to the out-of-object property store, grown by copying it
 * (`bench/api-per-request.ts --allocations`: ~1.3 KB per request). Any server works without it (the slot is
 * added on first use then).
 */
export class ApiIncomingMessage extends IncomingMessage {
  [requestFieldsSlot]: unknown = undefined;
}
