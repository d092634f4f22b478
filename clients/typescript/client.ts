// A client developer's first hour, typed by the service's own document: who am I, my documents,
// a draft written and read back. CI generates ./openapi.ts from the document (openapi-typescript)
// and type-checks this file with `tsc --strict` (.ci/run); it is never run.
import createClient from "openapi-fetch";
import type { paths } from "./openapi";

export interface FirstHour {
  tenantId: string;
  role: "member" | "editor" | "admin";
  documentNames: string[];
  documentsTotal: number;
  draftId: string;
  draftTitle: string;
  draftVersion: number;
  draftStatus: string;
}

export async function firstHour(baseUrl: string, token: string, org: string): Promise<FirstHour> {
  const api = createClient<paths>({
    baseUrl,
    headers: { Authorization: `Bearer ${token}`, "x-idp-org-id": org },
  });

  const me = await api.GET("/v1/system/whoami");
  if (me.data === undefined) throw new Error(`whoami: ${me.response.status}`);

  const documents = await api.GET("/v1/documents", {
    params: { query: { search: "compost", sortBy: "created_at", sortOrder: "desc", limit: 10 } },
  });
  if (documents.data === undefined) throw new Error(`documents.list: ${documents.response.status}`);

  const created = await api.POST("/v1/drafts", {
    body: { title: "Composting in winter", content: "<p>Keep the pile covered.</p>" },
  });
  if (created.data === undefined) throw new Error(`drafts.createDraft: ${created.response.status}`);

  const draft = await api.GET("/v1/drafts/{id}", { params: { path: { id: created.data.id } } });
  if (draft.data === undefined) throw new Error(`drafts.getById: ${draft.response.status}`);

  return {
    tenantId: me.data.tenant_id,
    role: me.data.role,
    documentNames: documents.data.data.map((document) => document.filename),
    documentsTotal: documents.data.total,
    draftId: draft.data.id,
    draftTitle: draft.data.title,
    draftVersion: draft.data.version,
    draftStatus: draft.data.status,
  };
}
