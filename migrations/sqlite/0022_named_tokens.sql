-- Named tokens with abilities (docs/operations.md, "Tokens for automations"). A login token is
-- named `login` and may do everything (`*`), as every token could before; a token made with
-- `integration-service token create` has a name of its own, unique per user, and the abilities
-- it was given, space-separated.
ALTER TABLE personal_access_tokens ADD COLUMN name TEXT NOT NULL DEFAULT 'login';
ALTER TABLE personal_access_tokens ADD COLUMN abilities TEXT NOT NULL DEFAULT '*';
CREATE UNIQUE INDEX personal_access_tokens_user_name ON personal_access_tokens (user_id, name)
    WHERE name <> 'login';
