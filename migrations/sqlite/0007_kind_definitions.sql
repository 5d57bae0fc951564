-- Kinds defined by data (a Table Schema); see the PostgreSQL migration.
CREATE TABLE kind_definitions (
    name        TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    format      TEXT    NOT NULL DEFAULT 'tableschema',
    definition  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    removed_at  INTEGER,
    PRIMARY KEY (name, version)
);
