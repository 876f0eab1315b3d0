-- Users, their personal access tokens, and failed logins (for throttling).
CREATE TABLE users (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE personal_access_tokens (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- hex SHA-256 of the secret part; the secret itself is never stored
    token_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT,
    expires_at BIGINT
);
CREATE INDEX personal_access_tokens_user ON personal_access_tokens(user_id);

CREATE TABLE login_failures (
    id BIGSERIAL PRIMARY KEY,
    email TEXT NOT NULL,
    address TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX login_failures_lookup ON login_failures(email, address, at);
CREATE INDEX login_failures_at ON login_failures(at);
