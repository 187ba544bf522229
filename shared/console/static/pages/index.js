// The console's pages, in navigation order. Add a page: write
// pages/<name>.js exporting default {id, title, visible, render} and add
// one import and one entry here (PAGES.md).
import home from './home.js';
import keys from './keys.js';
import teams from './teams.js';
import team from './team.js';
import users from './users.js';
import user from './user.js';
import customers from './customers.js';
import organizations from './organizations.js';
import organization from './organization.js';
import budgets from './budgets.js';
import spend from './spend.js';
import models from './models.js';

export default [home, keys, teams, team, users, user, customers, organizations, organization, budgets, spend, models];
