"""The floor every domain stands on that knows this service: the process's resources (`runtime`),
one declaration per operation (`procedures`), what a domain contributes (`manifest`), and the
local upload endpoint (`uploads`). Below it: `kit`, `config`, `auth`, `ai`, `storage`."""
