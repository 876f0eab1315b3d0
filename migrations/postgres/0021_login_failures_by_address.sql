-- Failed logins are also counted per source address across emails (password spraying), and
-- stored by a digest of the email (a fixed 64 characters, whatever a caller sends); rows of
-- the old form leave within the one-minute window.
CREATE INDEX login_failures_address ON login_failures(address, at);
