"""SEO (issue 39 and the issues after it): the tenant's SEO profile and competitors (here), and
its parts, each a sub-package with the same rooms."""
