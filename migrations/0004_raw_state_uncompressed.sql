-- 0004: keep a version's raw bytes uncompressed (out of line, in TOAST chunks).
--
-- GET streams a big state in slices so the server never holds it whole; a slice of a
-- compressed value is decompressed from its start, which makes streaming cost grow with
-- the square of the state's size. Uncompressed, substring() reads only the chunks of its
-- slice. The normalized rows hold the same data compressed per value, so the space this
-- costs is the raw copy's compression ratio, paid for exact byte-for-byte GETs.
ALTER TABLE state_versions ALTER COLUMN raw_state SET STORAGE EXTERNAL;
