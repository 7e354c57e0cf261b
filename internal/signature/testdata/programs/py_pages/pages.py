def page_count(items, per_page):
    return -(-items // per_page)
