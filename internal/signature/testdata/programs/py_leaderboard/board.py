def top(scores, extra):
    ranked = scores.sort(reverse=True)
    ranked.append(extra)
    return ranked[:3]
