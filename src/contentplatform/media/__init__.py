"""Media: images (and short videos) a tenant uploads or imports from stock, with their licences."""
