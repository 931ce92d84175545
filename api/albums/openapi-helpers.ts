// The helpers document.ts hands the album part (so both parts describe errors, auth and paging alike).
export type Schema = Record<string, unknown>;

export interface OpenApiHelpers {
  ref: (name: string) => Schema;
  json: (schema: Schema) => Schema;
  errorResponse: (description: string) => Schema;
  authenticated: (operation: Schema) => Schema;
  publicOperation: (operation: Schema) => Schema;
  idParam: Schema;
  pageParams: Schema[];
  page: (item: string) => Schema;
}
