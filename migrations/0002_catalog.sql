-- 0002_catalog: the live data-platform resources the server hosts itself
-- (spec: shared/spec/iac.md, "The world it manages"), and the records of its tables.
--
-- Every resource carries created_at = clock_timestamp() (not now(): many are created in
-- one transaction and export orders unmanaged resources by creation order).
-- Deleting a table removes its sub-resources and records; deleting a scope removes all.
-- Column names here equal the spec's field names, so some are quoted ("default", "unique").

CREATE TABLE scopes (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug        text NOT NULL UNIQUE,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE tables (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    scope_id     uuid NOT NULL REFERENCES scopes (id) ON DELETE CASCADE,
    name         text NOT NULL,
    description  text,
    -- authored settings plus the server-owned column_mapping (name -> key) and iac
    settings     jsonb NOT NULL DEFAULT '{}',
    tags         text[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ON tables (scope_id, created_at);
CREATE INDEX ON tables USING gin (tags);

-- A column's ID is "{table uuid}:{key}"; the key names its values inside records.
CREATE TABLE columns (
    table_id    uuid NOT NULL REFERENCES tables (id) ON DELETE CASCADE,
    key         text NOT NULL CHECK (key ~ '^col_[0-9a-z]{6}$'),
    id          text GENERATED ALWAYS AS (table_id::text || ':' || key) STORED PRIMARY KEY,
    name        text NOT NULL,
    type        text NOT NULL CHECK (type IN
                    ('text', 'number', 'boolean', 'date', 'datetime', 'select', 'reference', 'json')),
    required    boolean NOT NULL DEFAULT false,
    "unique"    boolean NOT NULL DEFAULT false,
    "default"   jsonb,
    options     jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT columns_name_key UNIQUE (table_id, name)
);
-- reference columns by target table (deleting a table looks for them)
CREATE INDEX ON columns ((options ->> 'table')) WHERE type = 'reference';

CREATE TABLE rules (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    table_id    uuid NOT NULL REFERENCES tables (id) ON DELETE CASCADE,
    expression  text NOT NULL,
    message     text,
    severity    text NOT NULL DEFAULT 'error' CHECK (severity IN ('error', 'warning', 'info')),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ON rules (table_id);

CREATE TABLE triggers (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    table_id    uuid NOT NULL REFERENCES tables (id) ON DELETE CASCADE,
    event       text NOT NULL CHECK (event IN ('insert', 'update', 'delete')),
    condition   text,
    action      jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ON triggers (table_id);

CREATE TABLE views (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    table_id    uuid NOT NULL REFERENCES tables (id) ON DELETE CASCADE,
    name        text,
    columns     text[] NOT NULL DEFAULT '{}',  -- column keys: renames do not break a view
    filter      jsonb,
    sort        jsonb,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (id, table_id)  -- target of public_reads' same-table foreign key
);
CREATE INDEX ON views (table_id);

CREATE TABLE grants (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    table_id     uuid NOT NULL REFERENCES tables (id) ON DELETE CASCADE,
    principal    text NOT NULL,
    permissions  text[] NOT NULL CHECK (permissions <@ ARRAY['read', 'write', 'admin']),
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT grants_principal_key UNIQUE (table_id, principal)
);

CREATE TABLE client_access (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    table_id    uuid NOT NULL REFERENCES tables (id) ON DELETE CASCADE,
    enabled     boolean NOT NULL DEFAULT true,
    origins     text[] NOT NULL DEFAULT '{}',
    rate_limit  integer CHECK (rate_limit >= 0),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT client_access_table_key UNIQUE (table_id)
);

CREATE TABLE commands (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    scope_id     uuid NOT NULL REFERENCES scopes (id) ON DELETE CASCADE,
    name         text NOT NULL,
    description  text,
    action       jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ON commands (scope_id);

-- tables: IDs of tables of the same scope; deleting a table removes its ID here.
CREATE TABLE insight_selections (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    scope_id    uuid NOT NULL REFERENCES scopes (id) ON DELETE CASCADE,
    chatroom    uuid NOT NULL,
    tables      uuid[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT insight_selections_chatroom_key UNIQUE (scope_id, chatroom)
);

-- A public read of a deleted view is revoked with it, never widened to the whole table.
CREATE TABLE public_reads (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    table_id    uuid NOT NULL REFERENCES tables (id) ON DELETE CASCADE,
    ref         text NOT NULL,
    "view"      uuid,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT public_reads_ref_key UNIQUE (table_id, ref),
    FOREIGN KEY ("view", table_id) REFERENCES views (id, table_id) ON DELETE CASCADE
);
CREATE INDEX ON public_reads ("view");

-- Rows of a table: {column key: value}. Data, not resources.
-- seq: creation order, the key of record pages (a cursor is one integer).
CREATE TABLE records (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    table_id    uuid NOT NULL REFERENCES tables (id) ON DELETE CASCADE,
    "values"    jsonb NOT NULL DEFAULT '{}',
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ON records (table_id, seq);
