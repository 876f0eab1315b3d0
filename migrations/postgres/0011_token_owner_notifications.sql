-- Every instance keeps the owners of recently checked tokens in memory (src/store/token_cache.rs)
-- and must forget one as soon as it changes anywhere: a token deleted (logout, revocation,
-- expiry clean-up, its user deleted) or its secret, expiry or user changed sends its id; a user
-- changed or deleted sends `*` (forget everything). Notifications go out when the transaction
-- commits; identical ones of one transaction are sent once.
CREATE FUNCTION notify_token_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('token_owners_changed', OLD.id::text);
    RETURN NULL;
END
$$;

CREATE FUNCTION notify_users_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('token_owners_changed', '*');
    RETURN NULL;
END
$$;

CREATE TRIGGER personal_access_tokens_deleted
    AFTER DELETE ON personal_access_tokens
    FOR EACH ROW EXECUTE FUNCTION notify_token_changed();

CREATE TRIGGER personal_access_tokens_changed
    AFTER UPDATE OF token_hash, expires_at, user_id ON personal_access_tokens
    FOR EACH ROW EXECUTE FUNCTION notify_token_changed();

CREATE TRIGGER users_changed
    AFTER UPDATE OR DELETE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION notify_users_changed();
