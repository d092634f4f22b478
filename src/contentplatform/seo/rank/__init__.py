"""Rank tracking: tracked keywords (keyword x market x device), their checks through a SERP
provider (DataForSEO's, or the labelled offline one in `local`), the stored SERPs and the
positions, visibility and traffic read from them."""
