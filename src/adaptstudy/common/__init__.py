"""Small pieces every layer uses: registries whose errors list the valid names, project paths, atomic writes."""
