"""`librarian eval gate`: an organization's judged questions as a regression gate for a deployment.

An organization keeps its own judged questions (`questions`: the file format and its validation).
A run scores them against the organization's current index and configuration (`run`: retrieval
through the product's one search core, answers through an answerer the caller provides, so this
package imports no graph), summarises the scores (`scores`), and compares them with the last
accepted run within stated tolerances (`compare`). Accepted runs are kept with the configuration
that produced them (`fingerprint`, `store`).
"""
