-- Kinds defined by data (a Table Schema), stored so that every worker and
-- service process knows them without a redeploy. Every change is a new
-- version; a batch records the version it was validated with. The kind's
-- current definition is its newest version, unless that one is removed.
CREATE TABLE kind_definitions (
    name        text        NOT NULL,
    version     integer     NOT NULL,
    format      text        NOT NULL DEFAULT 'tableschema',
    definition  text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    removed_at  timestamptz,
    PRIMARY KEY (name, version)
);
