// Projects: a workspace directory, the agent command (argv) run in it, whether runs may use the network, and
// which stored credentials its runs get (names only; values stay in the credential store until a run starts).
// Any key may read them; only admins may write them, because a project decides what gets executed, and with
// which secrets.
import path from 'node:path';
import { Router } from 'express';
import type { DocumentStore } from '../../store/document-store.js';
import { ApiError } from '../errors.js';
import type { ProjectRecord } from '../records.js';
import { newId, nowIso, storeKeys } from '../records.js';
import { sendCachedPage, updateRecord } from '../store-helpers.js';
import { PageCache } from '../page-cache.js';
import { requireRole } from '../auth/authenticate.js';
import { credentialCategories, isCredentialCategory } from '../credentials/categories.js';
import type { ProjectCredential } from '../runs/run-credentials.js';
import { projectCredentialProblem, projectCredentials } from '../runs/run-credentials.js';

interface ProjectFields {
  name?: string;
  workspace?: string;
  command?: string[];
  network?: boolean;
  credentials?: ProjectCredential[];
}

/** checkWorkspace requires an absolute, normalized path (no `..`), inside workspaceRoot when one is set. */
export function checkWorkspace(workspace: string, workspaceRoot: string | undefined): string {
  const fail = (why: string): never => {
    throw new ApiError('INVALID_WORKSPACE', `workspace ${why}`);
  };
  if (workspace.includes('\0')) fail('must not contain NUL');
  if (!path.isAbsolute(workspace)) fail('must be an absolute path');
  if (workspace.split('/').includes('..')) fail('must not contain .. segments');
  const normalized = path.resolve(workspace);
  if (workspaceRoot !== undefined) {
    const root = path.resolve(workspaceRoot);
    if (normalized !== root && !normalized.startsWith(root + path.sep)) fail(`must be inside ${root}`);
  }
  return normalized;
}

function checkCommand(command: string[]): string[] {
  if (command.some((arg) => arg.includes('\0'))) {
    throw new ApiError('VALIDATION_FAILED', 'command arguments must not contain NUL', [
      { path: '/body/command', message: 'contains NUL' },
    ]);
  }
  if (command[0]!.length === 0) {
    throw new ApiError('VALIDATION_FAILED', 'command[0] names the program and must not be empty', [
      { path: '/body/command/0', message: 'empty' },
    ]);
  }
  return command;
}

function checkCredentials(credentials: ProjectCredential[]): ProjectCredential[] {
  const problem = projectCredentialProblem(credentials);
  if (problem) throw new ApiError('VALIDATION_FAILED', problem, [{ path: '/body/credentials', message: problem }]);
  if (credentials.some((entry) => !isCredentialCategory(entry.category))) {
    throw new ApiError('INVALID_CATEGORY', `credential categories are ${credentialCategories.join(', ')}`);
  }
  // Stored in a fixed shape (the validator has refused any other field).
  return credentials.map(({ category, name, as, target }) => ({ category, name, as, target }));
}

/** view is the documented Project; a record made before credentials existed shows none. */
const view = (record: ProjectRecord): ProjectRecord =>
  Array.isArray(record.credentials) ? record : { ...record, credentials: projectCredentials(record) };

export function projectRoutes(store: DocumentStore, workspaceRoot: string | undefined): Router {
  const router = Router();

  // Not async: behind the key check's barrier the page is sent at once (sendPage).
  // Every key lists the same projects (no per-request filter): the page's JSON is kept per query and state seq.
  const pages = new PageCache();
  router.get('/projects', (req, res) =>
    sendCachedPage<ProjectRecord, ProjectRecord>(
      res,
      req.readStore ?? store,
      storeKeys.projects,
      req.query,
      view,
      pages,
    ),
  );

  router.post('/projects', requireRole('admin'), async (req, res) => {
    const body = req.body as Required<Pick<ProjectFields, 'name' | 'workspace' | 'command'>> & ProjectFields;
    const now = nowIso();
    const record: ProjectRecord = {
      id: newId('prj'),
      name: body.name,
      workspace: checkWorkspace(body.workspace, workspaceRoot),
      command: checkCommand(body.command),
      network: body.network ?? false,
      credentials: checkCredentials(body.credentials ?? []),
      created_by: req.auth!.userId,
      created_at: now,
      updated_at: now,
    };
    await store.put(storeKeys.project(record.id), record, { expectedVersion: 0 });
    res.status(201).json(view(record));
  });

  router.get('/projects/:id', async (req, res) => {
    const found = await (req.readStore ?? store).get<ProjectRecord>(storeKeys.project(req.params.id as string));
    if (!found) throw new ApiError('NOT_FOUND', 'no such project');
    res.json(view(found.value));
  });

  router.patch('/projects/:id', requireRole('admin'), async (req, res) => {
    const body = req.body as ProjectFields;
    const changes: Partial<ProjectRecord> = {};
    if (body.name !== undefined) changes.name = body.name;
    if (body.workspace !== undefined) changes.workspace = checkWorkspace(body.workspace, workspaceRoot);
    if (body.command !== undefined) changes.command = checkCommand(body.command);
    if (body.network !== undefined) changes.network = body.network;
    if (body.credentials !== undefined) changes.credentials = checkCredentials(body.credentials);
    const record = await updateRecord<ProjectRecord>(store, storeKeys.project(req.params.id as string), (current) => ({
      ...current,
      ...changes,
      updated_at: nowIso(),
    }));
    res.json(view(record));
  });

  router.delete('/projects/:id', requireRole('admin'), async (req, res) => {
    const { deleted } = await store.delete(storeKeys.project(req.params.id as string));
    if (!deleted) throw new ApiError('NOT_FOUND', 'no such project');
    res.status(204).end();
  });

  return router;
}
